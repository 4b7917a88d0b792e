import { Deadline, ManualClock } from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { Agent, request } from 'undici'
import { afterEach, expect, it } from 'vitest'
import { createConnector, createFetch, deadlineInterceptor } from '../src/index.js'
import { type EgressEvents, recordEgress, rejection } from './helpers.js'

// A failure while the body is read is never retried, and `retry-skipped`
// says why. createFetch said `after-first-byte` for every one of them, where
// the interceptor — for the same failure — says what the retry rules say
// first: `no-budget` when the deadline ran out mid-body. createFetch now
// judges them as the interceptor does. The caller's own cancel of the body
// (which the README recommends, to free the connection) is no failure at all:
// it was skipped for `aborted`, and now publishes no `retry-skipped` (see
// callerStoppedBody.test.ts). The deadline runs on a ManualClock: no test
// here waits on time.

let closers: { close(): Promise<void> }[] = []
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  events = undefined
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

async function stalling(): Promise<FaultServer> {
  const server = await faultServer({ type: 'headers-then-stall' })
  closers.push(server)
  return server
}
function client() {
  const fetch = createFetch({ bodyTimeoutMs: 0 })
  closers.push(fetch)
  return fetch
}
function interceptorClient() {
  const agent = new Agent({ connect: createConnector(), headersTimeout: 0, bodyTimeout: 0 })
  closers.push(agent)
  return agent.compose(deadlineInterceptor({ bodyTimeoutMs: 0 }))
}

it('createFetch: the deadline running out mid-body is skipped for `no-budget`', async () => {
  const server = await stalling()
  const clock = new ManualClock()
  const deadline = Deadline.after(5000, { clock })
  events = recordEgress()
  const res = await client()(server.url, { deadline })
  const read = rejection(res.text())
  clock.advance(5000)
  expect(await read).toMatchObject({ code: 'DEADLINE_EXCEEDED' })

  expect(events.skipped.map(({ reason, why }) => ({ reason, why }))).toEqual([
    { reason: 'DEADLINE_EXCEEDED', why: 'no-budget' },
  ])
})

it('the interceptor says the same for the same failure (the control)', async () => {
  const server = await stalling()
  const clock = new ManualClock()
  const deadline = Deadline.after(5000, { clock })
  events = recordEgress()
  const res = await request(server.url, { dispatcher: interceptorClient(), deadline } as never)
  const read = rejection(res.body.text())
  clock.advance(5000)
  expect(await read).toMatchObject({ code: 'DEADLINE_EXCEEDED' })

  expect(events.skipped.map(({ reason, why }) => ({ reason, why }))).toEqual([
    { reason: 'DEADLINE_EXCEEDED', why: 'no-budget' },
  ])
})

it("createFetch: the caller's own body.cancel() is no failure: no retry-skipped at all", async () => {
  const server = await stalling()
  using deadline = Deadline.after(30_000)
  events = recordEgress()
  const res = await client()(server.url, { deadline })
  await res.body?.cancel()
  await server.clientGone(0)

  // It was skipped for `aborted`: counted (otel's retries{outcome=skipped})
  // as a retry not made on every response the caller stopped reading,
  // where nothing failed and there was nothing to retry. Its attempt-end
  // says the caller stopped it instead.
  expect(events.skipped).toEqual([])
  expect(events.ends.map((m) => m.stoppedBy)).toEqual(['caller'])
})

it('a body failure with `retry: false` announces no decision', async () => {
  const server = await stalling()
  const clock = new ManualClock()
  const deadline = Deadline.after(5000, { clock })
  events = recordEgress()
  const res = await client()(server.url, { deadline, retry: false })
  const read = rejection(res.text())
  clock.advance(5000)
  await read
  expect(events.skipped).toEqual([])
  expect(events.ends.map((m) => m.errorCode)).toEqual(['DEADLINE_EXCEEDED'])
})
