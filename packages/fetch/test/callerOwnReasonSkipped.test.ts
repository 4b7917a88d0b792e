import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Agent, request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { createFetch, deadlineInterceptor, HeadersTimeoutError } from '../src/index.js'
import { recordEgress } from './helpers.js'

let server: Server | undefined
let closers: { close(): Promise<unknown> }[] = []
afterEach(async () => {
  for (const closer of closers) await closer.close()
  closers = []
  if (server) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

/** Never answers; `arrived` resolves when a request has reached it. */
async function silent(): Promise<{ url: string; arrived: Promise<unknown> }> {
  server = createServer(() => {})
  const arrived = once(server, 'request')
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, arrived }
}

/** What `AbortSignal.timeout` aborts with, without waiting for one to fire. */
const timeoutReason = () =>
  new DOMException('The operation was aborted due to timeout', 'TimeoutError')

/**
 * A caller's signal aborted with a reason of its own — `AbortSignal.timeout`'s
 * `TimeoutError`, an `Error` it chose — ends the call, never retried. The
 * interceptor announced that (`retry-skipped`, `not-retryable`); createFetch
 * announced nothing, only for an `AbortError`, a `CLIENT_CLOSED` or a
 * `DEADLINE_EXCEEDED`.
 */
describe("a caller's abort with a reason of its own", () => {
  it.each([
    ['TimeoutError', timeoutReason],
    ['Error', () => new Error('my own stop')],
  ])(
    'createFetch: %s is announced as retry-skipped (not-retryable), as the interceptor announces it',
    async (reason, make) => {
      const { url, arrived } = await silent()
      const fetch = createFetch()
      closers.push(fetch)
      const events = recordEgress()
      try {
        const controller = new AbortController()
        const call = fetch(url, { signal: controller.signal }).catch((e: unknown) => e)
        await arrived
        const given = make()
        controller.abort(given)
        expect(await call).toBe(given)
        expect(events.retries).toEqual([])
        expect(events.skipped.map((m) => [m.reason, m.why])).toEqual([[reason, 'not-retryable']])
      } finally {
        events.stop()
      }
    },
  )

  it('the interceptor: the same TimeoutError, the same event (the control)', async () => {
    const { url, arrived } = await silent()
    const agent = new Agent()
    closers.push(agent)
    const dispatcher = agent.compose(deadlineInterceptor())
    const events = recordEgress()
    try {
      const controller = new AbortController()
      const call = request(url, { dispatcher, signal: controller.signal }).catch((e: unknown) => e)
      await arrived
      controller.abort(timeoutReason())
      expect((await call) as Error).toMatchObject({ name: 'TimeoutError' })
      expect(events.skipped.map((m) => [m.reason, m.why])).toEqual([
        ['TimeoutError', 'not-retryable'],
      ])
    } finally {
      events.stop()
    }
  })

  it('the interceptor: a reason that looks retryable (a HeadersTimeoutError) is never announced as a retry', async () => {
    const { url, arrived } = await silent()
    const agent = new Agent()
    closers.push(agent)
    const dispatcher = agent.compose(deadlineInterceptor())
    const events = recordEgress()
    try {
      const controller = new AbortController()
      const call = request(url, { dispatcher, signal: controller.signal }).catch((e: unknown) => e)
      await arrived
      // A fan-out stopping its other calls with the first one's failure.
      const given = new HeadersTimeoutError({ elapsedMs: 1, bytesReceived: 0, limitMs: 1 })
      controller.abort(given)
      expect(await call).toBe(given)
      expect(events.retries).toEqual([])
      expect(events.skipped.map((m) => [m.reason, m.why])).toEqual([
        ['HEADERS_TIMEOUT', 'not-retryable'],
      ])
    } finally {
      events.stop()
    }
  })

  it('createFetch under retry: false still announces nothing (it asked for no retry decisions)', async () => {
    const { url, arrived } = await silent()
    const fetch = createFetch({ retry: false })
    closers.push(fetch)
    const events = recordEgress()
    try {
      const controller = new AbortController()
      const call = fetch(url, { signal: controller.signal }).catch((e: unknown) => e)
      await arrived
      controller.abort(timeoutReason())
      await call
      expect(events.skipped).toEqual([])
    } finally {
      events.stop()
    }
  })
})

describe("createFetch: the caller's reason surfaces unchanged", () => {
  it('a reason that is not an Error, from the signal or a cancelled deadline, gets no `stack` written onto it', async () => {
    const { Deadline } = await import('@hourglass/core')
    const { url, arrived } = await silent()
    const fetch = createFetch()
    closers.push(fetch)
    const controller = new AbortController()
    const bySignal = fetch(url, { signal: controller.signal }).catch((e: unknown) => e)
    await arrived
    const reason = { code: 'USER_LEFT' }
    controller.abort(reason)
    expect(await bySignal).toBe(reason)
    const deadline = Deadline.after(5000)
    const byDeadline = fetch(url, { deadline }).catch((e: unknown) => e)
    const cancelled = { code: 'SHUTDOWN' }
    setImmediate(() => deadline.cancel(cancelled))
    expect(await byDeadline).toBe(cancelled)
    // Before: undici's fetch() wrote its own stack trace onto each.
    expect([Object.keys(reason), Object.keys(cancelled)]).toEqual([['code'], ['code']])
  })
})
