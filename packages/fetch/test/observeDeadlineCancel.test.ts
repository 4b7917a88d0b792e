import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { ClientClosedError, Deadline, ManualClock, runWithDeadline } from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { Agent, request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { createConnector, createFetch, deadlineInterceptor } from '../src/index.js'
import { nextRetry, recordEgress, rejection } from './helpers.js'

// Dark mode (`observe: true`, express's `deadline({ mode: 'observe' })`)
// observes the deadline's EXPIRY only. A cancel is no enforcement decision
// but a fact — the caller is gone (the client left) — so the work for it
// stops in every mode: the request in flight, a retry's wait, a call not
// yet sent. Before, fetch ignored observe deadlines altogether, cancel
// included: the upstream stayed open after the client had left.

const open: Array<{ close(): Promise<unknown> }> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()))
})

async function upstream(fault: Parameters<typeof faultServer>[0]): Promise<FaultServer> {
  const server = await faultServer(fault)
  open.push(server)
  return server
}

function fetcher(options: Parameters<typeof createFetch>[0] = {}) {
  const fetch = createFetch(options)
  open.push(fetch)
  return fetch
}

function interceptorDispatcher() {
  const agent = new Agent({ connect: createConnector(), headersTimeout: 0, bodyTimeout: 0 })
  open.push(agent)
  return agent.compose(deadlineInterceptor())
}

describe('a cancelled dark-mode deadline stops the call (the caller is gone in every mode)', () => {
  it.each([
    ['createFetch', (url: string) => fetcher()(url).then((res) => res.text())],
    [
      'the interceptor (undici.request)',
      (url: string) =>
        request(url, { dispatcher: interceptorDispatcher() }).then((res) => res.body.text()),
    ],
  ])(
    '%s, deadline from the context: the upstream is released, the call rejects with the cancel reason',
    async (_, call) => {
      const up = await upstream({ type: 'hang' })
      const egress = recordEgress()
      const deadline = Deadline.after(60_000, { observe: true })
      const pending = runWithDeadline(deadline, () => call(up.url))
      await up.request(0)
      const reason = new ClientClosedError()
      deadline.cancel(reason)

      expect(await rejection(pending)).toBe(reason)
      const record = await up.clientGone(0)
      expect(record.clientGoneAt).toBeDefined()
      expect(egress.ends.map((m) => m.errorCode)).toEqual(['CLIENT_CLOSED'])
      egress.stop()
    },
    3000,
  )

  it('a call started under a dark-mode deadline already cancelled is refused at once: nothing is sent', async () => {
    const up = await upstream({ type: 'respond', body: 'ok' })
    const egress = recordEgress()
    const deadline = Deadline.after(60_000, { observe: true })
    const reason = new ClientClosedError()
    deadline.cancel(reason)

    expect(await rejection(fetcher()(up.url, { deadline }))).toBe(reason)
    expect(up.records).toHaveLength(0)
    expect(egress.attempts).toHaveLength(0) // never sent, so no attempt event either
    egress.stop()
  })

  it("a retry's wait (Retry-After) ends at the cancel: no second request", async () => {
    const clock = new ManualClock() // never advanced: only the cancel can end the 30 s wait
    const up = await upstream({ type: 'retry-after', status: 503, retryAfter: 30 })
    const fetch = fetcher({ clock, retry: { statuses: [503] } })
    const deadline = Deadline.after(120_000, { observe: true, clock })
    const retried = nextRetry()
    const pending = fetch(up.url, { deadline })
    expect((await retried).delayMs).toBe(30_000)
    const reason = new ClientClosedError()
    deadline.cancel(reason)

    expect(await rejection(pending)).toBe(reason)
    expect(up.records).toHaveLength(1)
  }, 3000)
})

describe('an observed expiry still changes nothing', () => {
  it('a request in flight when the dark-mode deadline passes gets its answer; a call after it is sent', async () => {
    const clock = new ManualClock()
    const held: ServerResponse[] = []
    let arrived: () => void = () => {}
    const server = createServer((_req, res) => {
      held.push(res)
      arrived()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    open.push({
      close: () => {
        server.closeAllConnections()
        return new Promise((resolve) => server.close(resolve))
      },
    })
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    const fetch = fetcher({ clock })
    const deadline = Deadline.after(100, { observe: true, clock })

    const first = fetch(url, { deadline })
    await new Promise<void>((resolve) => {
      arrived = resolve
    })
    clock.advance(200) // the deadline expires, observed: nothing is aborted
    expect(deadline.expired).toBe(true)
    held[0]?.end('late but whole')
    expect(await (await first).text()).toBe('late but whole')

    const second = fetch(url, { deadline }) // after the expiry: still sent, as without Hourglass
    await new Promise<void>((resolve) => {
      arrived = resolve
    })
    held[1]?.end('sent anyway')
    expect(await (await second).text()).toBe('sent anyway')
  })
})

describe("undici.request aborted mid-body by the caller's signal", () => {
  it('the attempt ends with the signal’s reason (CLIENT_CLOSED), not undici’s bare AbortError', async () => {
    const up = await upstream({ type: 'bytes-then-stall', bytes: 64 })
    const egress = recordEgress()
    const caller = new AbortController()
    const reason = new ClientClosedError()
    const res = await request(up.url, {
      dispatcher: interceptorDispatcher(),
      signal: caller.signal,
    })
    const reading = (async () => {
      for await (const _ of res.body) caller.abort(reason) // the first bytes came: the caller leaves
    })()

    expect(await rejection(reading)).toBe(reason) // what the caller receives: unchanged
    expect(egress.ends).toHaveLength(1)
    expect(egress.ends[0]).toMatchObject({ errorCode: 'CLIENT_CLOSED', phase: 'body' })
    egress.stop()
  })
})
