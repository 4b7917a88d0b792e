import { ManualClock } from '@hourglass/core'
import { type FaultServer, faultServer } from '@hourglass/testkit'
import { Agent, type Dispatcher, request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type BodyTimeoutError,
  createConnector,
  deadlineInterceptor,
  type EgressOptions,
  type HeadersTimeoutError,
  isBodyTimeout,
  isHeadersTimeout,
} from '../src/index.js'
import { rejection } from './helpers.js'

// undici's per-request `headersTimeout` / `bodyTimeout` were dropped by the
// interceptor (it sets undici's own timers to 0, its phase timers replacing
// them): a call that plain undici ends at 1 s waited out the interceptor's
// 10 s defaults instead. A caller's value now becomes that request's phase
// limit when it is shorter than the interceptor's. The phase timers run on
// a ManualClock: each test moves it past the limit asked for, then far past
// the interceptor's own, and reads which limit ended the call (`limitMs`),
// so nothing waits in real time and no millisecond is asserted.

let closers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

async function serve(plan: Parameters<typeof faultServer>[0]): Promise<FaultServer> {
  const server = await faultServer(plan)
  closers.push(server)
  return server
}

/** No retry: a GET that times out with no byte read would be sent again, and that one wait on the clock. */
function dispatcherWith(given: EgressOptions): Dispatcher {
  const options: EgressOptions = { ...given, retry: false }
  const agent = new Agent({ connect: createConnector(options) })
  closers.push(agent)
  return agent.compose(deadlineInterceptor(options))
}

describe("undici's per-request headersTimeout and bodyTimeout through deadlineInterceptor", () => {
  it('a headersTimeout shorter than the interceptor’s is the headers limit of that request', async () => {
    const clock = new ManualClock()
    const server = await serve({ type: 'hang' })
    const dispatcher = dispatcherWith({ clock })
    const call = rejection(request(server.url, { dispatcher, headersTimeout: 300 }))
    await server.request(0) // the headers phase (and its timer) began before the request was written
    clock.advance(300)
    clock.advance(10_000) // past the interceptor's own 10 s default too
    const error = (await call) as HeadersTimeoutError
    expect(isHeadersTimeout(error)).toBe(true)
    expect(error.limitMs).toBe(300)
  })

  it('a bodyTimeout shorter than the interceptor’s is the idle limit of that response body', async () => {
    const clock = new ManualClock()
    const server = await serve({ type: 'headers-then-stall' })
    const dispatcher = dispatcherWith({ clock })
    const res = await request(server.url, { dispatcher, bodyTimeout: 200 })
    const read = rejection(res.body.text())
    clock.advance(200)
    clock.advance(10_000)
    const error = (await read) as BodyTimeoutError
    expect(isBodyTimeout(error)).toBe(true)
    expect(error.limitMs).toBe(200)
  })

  it('a per-request value longer than the interceptor’s limit does not widen it', async () => {
    const clock = new ManualClock()
    const server = await serve({ type: 'hang' })
    const dispatcher = dispatcherWith({ clock, headersTimeoutMs: 100 })
    const call = rejection(request(server.url, { dispatcher, headersTimeout: 5000 }))
    await server.request(0)
    clock.advance(100)
    const error = (await call) as HeadersTimeoutError
    expect(isHeadersTimeout(error)).toBe(true)
    expect(error.limitMs).toBe(100)
  })

  it('applies where the interceptor has no limit of its own (0), and 0 from the caller widens nothing', async () => {
    const clock = new ManualClock()
    const server = await serve({ type: 'hang' })
    const unlimited = dispatcherWith({ clock, headersTimeoutMs: 0 })
    // Without a limit nothing would ever end this call: the caller gives up
    // right after the clock has moved, so a missing limit fails, not hangs.
    const caller = new AbortController()
    const first = rejection(
      request(server.url, { dispatcher: unlimited, headersTimeout: 250, signal: caller.signal }),
    )
    await server.request(0)
    clock.advance(250)
    caller.abort(new Error('no headers limit fired'))
    expect(((await first) as HeadersTimeoutError).limitMs).toBe(250)

    const limited = dispatcherWith({ clock, headersTimeoutMs: 150 })
    const second = rejection(request(server.url, { dispatcher: limited, headersTimeout: 0 }))
    await server.request(1)
    clock.advance(150)
    expect(((await second) as HeadersTimeoutError).limitMs).toBe(150)
  })

  it('a value undici refuses is still refused, as without the interceptor', async () => {
    const server = await serve({ type: 'respond', body: 'ok' })
    const dispatcher = dispatcherWith({})
    for (const headersTimeout of [-1, Number.NaN]) {
      const error = await rejection(request(server.url, { dispatcher, headersTimeout }))
      expect((error as { code?: string }).code).toBe('UND_ERR_INVALID_ARG')
    }
  })
})
