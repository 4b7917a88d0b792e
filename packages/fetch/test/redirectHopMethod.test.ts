import { type FaultServer, faultServer } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { createFetch, type HourglassFetch } from '../src/index.js'
import { type EgressEvents, recordEgress } from './helpers.js'

// fetch sends a redirect hop with a method of its own: a POST answered with
// 301/302, or anything but GET/HEAD answered with 303, goes on as a GET. Each
// hop's `attempt` / `attempt-end` events named the caller's method instead,
// so a trace read "HTTP POST /final" for a GET the server received. No test
// here measures time.

let closers: { close(): Promise<void> }[] = []
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  events = undefined
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

async function redirecting(status: number): Promise<FaultServer> {
  const server = await faultServer((r) =>
    r.url === '/start'
      ? { type: 'respond', status, headers: { location: '/final' } }
      : { type: 'respond', body: 'here' },
  )
  closers.push(server)
  return server
}
function client(): HourglassFetch {
  const fetch = createFetch()
  closers.push(fetch)
  return fetch
}

it.each([301, 302, 303])(
  'a POST redirected with %i: the hop is reported with the GET that was sent',
  async (status) => {
    const server = await redirecting(status)
    events = recordEgress()
    const res = await client()(`${server.url}/start`, { method: 'POST', body: 'order=42' })
    expect(await res.text()).toBe('here')

    const sent = server.records.map((r) => r.method)
    expect(sent).toEqual(['POST', 'GET'])
    expect(events.attempts.map((m) => m.method)).toEqual(sent)
    expect(events.ends.map((m) => m.method)).toEqual(sent)
  },
)

it('a POST redirected with 307 keeps its method, and so do its events (the control)', async () => {
  const server = await redirecting(307)
  events = recordEgress()
  const res = await client()(`${server.url}/start`, { method: 'POST', body: 'order=42' })
  expect(await res.text()).toBe('here')

  expect(server.records.map((r) => r.method)).toEqual(['POST', 'POST'])
  expect(events.attempts.map((m) => m.method)).toEqual(['POST', 'POST'])
})
