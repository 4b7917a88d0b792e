import { Deadline, isDeadlineExceeded, isExpiryOf, ManualClock } from '@hourglass/core'
import { type Fault, type FaultPlan, type FaultServer, faultServer } from '@hourglass/testkit'
import { Agent, request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  createConnector,
  createFetch,
  deadlineInterceptor,
  HeadersTimeoutError,
} from '../src/index.js'
import { nextRetry, recordEgress, rejection } from './helpers.js'

// A budget on trial inside an enforced request — an observe-only child of
// an enforcing deadline, `req.deadline.child(100, { observe: true })`, as
// core's README describes it — is ended when the request's deadline
// expires: the work under it is bounded by that deadline. fetch read the
// trial's `observe` alone: with 3 ms left on the request (under
// `minBudgetMs`), the call was sent all the same, for an answer nobody would
// wait for; under the request itself it is refused. And a phase limit due
// with the request's expiry failed as that phase's timeout, not as the
// request's expiry (a 502 where the request's own deadline answers 504).

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

/** An enforced request with `leftMs` left, and a trial budget in it whose own time has passed. */
function trialUnder(leftMs: number) {
  const clock = new ManualClock()
  const request = Deadline.after(1000, { clock })
  const trial = request.child(100, { observe: true })
  clock.advance(1000 - leftMs)
  open.push({
    close: async () => {
      trial.dispose()
      request.dispose()
    },
  })
  return { clock, request, trial }
}

describe('a call under a budget on trial is refused as under the enforcing deadline above it', () => {
  it('createFetch: under minBudgetMs left on the request, nothing is sent; the request’s expiry, told early', async () => {
    const up = await upstream({ type: 'respond', body: 'ok' })
    const fetch = fetcher()
    const { request, trial } = trialUnder(3)
    expect(trial.expired).toBe(true)
    expect(fetch.wouldRefuse({ deadline: request })).toBe(true)
    expect(fetch.wouldRefuse({ deadline: trial })).toBe(true)

    const error = await rejection(fetch(up.url, { deadline: trial }))
    expect(isDeadlineExceeded(error)).toBe(true)
    expect(isExpiryOf(error, request)).toBe(true)
    expect(up.records).toHaveLength(0)
  })

  it('the interceptor (undici.request) too', async () => {
    const up = await upstream({ type: 'respond', body: 'ok' })
    const { request: enforced, trial } = trialUnder(3)
    const dispatcher = interceptorDispatcher()
    const error = await rejection(
      request(up.url, { dispatcher, deadline: trial } as never).then((res) => res.body.text()),
    )
    expect(isDeadlineExceeded(error)).toBe(true)
    expect(isExpiryOf(error, enforced)).toBe(true)
    expect(up.records).toHaveLength(0)
  })

  it('unchanged: with time on the request, the call is sent, with what the request has left', async () => {
    const up = await upstream({ type: 'respond', body: 'ok' })
    const fetch = fetcher()
    const { trial } = trialUnder(850)
    expect(fetch.wouldRefuse({ deadline: trial })).toBe(false)
    const res = await fetch(up.url, { deadline: trial })
    expect(await res.text()).toBe('ok')
    expect(up.records.map((r) => r.headers['x-deadline-remaining-ms'])).toEqual(['850'])
  })

  it('unchanged: dark mode throughout refuses nothing by time', async () => {
    const up = await upstream({ type: 'respond', body: 'ok' })
    const fetch = fetcher()
    const clock = new ManualClock()
    using dark = Deadline.after(100, { clock, observe: true })
    using step = dark.child(50)
    clock.advance(100)
    expect(fetch.wouldRefuse({ deadline: step })).toBe(false)
    const res = await fetch(up.url, { deadline: step })
    expect(await res.text()).toBe('ok')
    expect(up.records).toHaveLength(1)
  })

  it('a phase limit due with the request’s expiry fails as that expiry, as under the request itself', async () => {
    const up = await upstream({ type: 'hang' })
    // The phase limit falls within a ms (TIE_MS) of the request's end: the request's wins.
    const fetch = fetcher({ headersTimeoutMs: 100, retry: false })
    const { clock, request, trial } = trialUnder(100.5)
    const pending = rejection(fetch(up.url, { deadline: trial }))
    await up.request(0)
    clock.advance(100)
    const error = await pending
    expect(error).not.toBeInstanceOf(HeadersTimeoutError)
    expect(isDeadlineExceeded(error)).toBe(true)
    expect(isExpiryOf(error, request)).toBe(true)
  })
})

// A trial disposed while its call runs — `return fetch(url, { deadline:
// trial })` from a `using` scope, without await — no longer hears the
// request above it, and core reads it as bounding nothing. The call in
// flight still belongs to the request: not only its first attempt, but a
// retry or a redirect hop made after the dispose. Read again per attempt,
// those ran as under no deadline: never ended under a limit of 0 after the
// request expired or its client left, a retry sent 1 s after the client
// left, a hop sent with no x-deadline-remaining-ms.
describe('a trial disposed while its call runs: retries and hops still belong to the call', () => {
  /** An enforced request with 5 s left and a live trial of 500 ms in it. */
  function liveTrial() {
    const clock = new ManualClock()
    const request = Deadline.after(5000, { clock })
    const trial = request.child(500, { observe: true })
    open.push({
      close: async () => {
        trial.dispose()
        request.dispose()
      },
    })
    return { clock, request, trial }
  }

  /** The first request disposes the trial as it arrives (the call in flight) and is answered `first`; the rest hang. */
  function disposingAt(trial: Deadline, first: Fault): FaultPlan {
    return (_, index) => {
      if (index > 0) return { type: 'hang' }
      trial.dispose()
      return first
    }
  }

  it('createFetch: a retry sent after the dispose ends at the request’s expiry (headersTimeoutMs 0)', async () => {
    const { clock, request, trial } = liveTrial()
    const up = await upstream(
      disposingAt(trial, { type: 'retry-after', status: 503, retryAfter: 0 }),
    )
    const fetch = fetcher({ headersTimeoutMs: 0, retry: { statuses: [503] } })
    const events = recordEgress()
    const pending = rejection(fetch(up.url, { deadline: trial }))
    await up.request(1)
    clock.advance(5000)
    const error = await pending
    events.stop()
    expect(isExpiryOf(error, request)).toBe(true)
    expect(up.records).toHaveLength(2)
    // Each attempt's event reads the deadline its header was written off:
    // the retry's said Infinity (the disposed trial) beside the request's 5000.
    expect(events.attempts.map((m) => [m.remainingMs, m.headerMs])).toEqual([
      [500, 500],
      [5000, 5000],
    ])
  })

  it('the interceptor (undici.request): a retry sent after the dispose ends when the client leaves', async () => {
    const { request: enforced, trial } = liveTrial()
    const up = await upstream(
      disposingAt(trial, { type: 'retry-after', status: 503, retryAfter: 0 }),
    )
    const agent = new Agent({ connect: createConnector(), headersTimeout: 0, bodyTimeout: 0 })
    open.push(agent)
    const dispatcher = agent.compose(
      deadlineInterceptor({ headersTimeoutMs: 0, retry: { statuses: [503] } }),
    )
    const pending = rejection(request(up.url, { dispatcher, deadline: trial } as never))
    await up.request(1)
    const left = new Error('client left')
    enforced.cancel(left)
    expect(await pending).toBe(left)
    expect(up.records).toHaveLength(2)
  })

  it.each([
    ['disposed while live', 0],
    // Past its observed expiry it still reads as bounded by the request
    // (boundingDeadline walks past it) yet no longer hears it: the wait ran
    // its whole Retry-After after the client left.
    ['disposed after its observed expiry', 600],
  ])(
    'the request cancelled during the Retry-After wait, the trial %s: no retry is sent, and the wait’s timer is released',
    async (_, spentMs) => {
      const { clock, request: enforced, trial } = liveTrial()
      clock.advance(spentMs)
      const up = await upstream(
        disposingAt(trial, { type: 'retry-after', status: 503, retryAfter: 1 }),
      )
      const fetch = fetcher({ retry: { statuses: [503] } })
      const retried = nextRetry()
      const pending = rejection(fetch(up.url, { deadline: trial }))
      expect((await retried).delayMs).toBe(1000)
      const left = new Error('client left')
      enforced.cancel(left)
      expect(await pending).toBe(left)
      clock.advance(1000)
      expect(up.records).toHaveLength(1)
      expect(clock.pendingTimers).toBe(0)
    },
  )

  it('createFetch: a redirect hop after the dispose carries what the request has left, and ends with it', async () => {
    const { request: enforced, trial } = liveTrial()
    const up = await upstream(
      disposingAt(trial, { type: 'respond', status: 307, headers: { location: '/b' } }),
    )
    const fetch = fetcher({ headersTimeoutMs: 0 })
    const pending = rejection(fetch(`${up.url}/a`, { deadline: trial }))
    await up.request(1)
    const left = new Error('client left')
    enforced.cancel(left)
    expect(await pending).toBe(left)
    // The first while the trial lived (its own 500 ms), the hop the request's.
    expect(up.records.map((r) => r.headers['x-deadline-remaining-ms'])).toEqual(['500', '5000'])
  })
})
