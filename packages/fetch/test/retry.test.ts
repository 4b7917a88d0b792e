import {
  retryAfterMs as coreRetryAfterMs,
  DEADLINE_EXPIRED_HEADER,
  Deadline,
  isDeadlineExceeded,
  ManualClock,
} from '@hourglass/core'
import { type FaultServer, faultServer, tcpFaultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  createFetch,
  type HourglassFetch,
  isBodyTimeout,
  isConnectError,
  isHeadersTimeout,
  type LookupFunction,
  retryAfterMs,
} from '../src/index.js'
import { type EgressEvents, nextRetry, recordEgress, rejection } from './helpers.js'
import { frozenClock } from './support/frozenClock.js'

let closers: { close(): Promise<void> }[] = []
let events: EgressEvents

async function serve(plan: Parameters<typeof faultServer>[0]): Promise<FaultServer> {
  const server = await faultServer(plan)
  closers.push(server)
  return server
}
function client(options: Parameters<typeof createFetch>[0] = {}): HourglassFetch {
  const fetch = createFetch(options)
  closers.push(fetch)
  return fetch
}
/** The first request hangs, later ones answer at once. */
const hangThenAnswer = (_req: unknown, index: number) =>
  index === 0 ? ({ type: 'hang' } as const) : ({ type: 'respond', body: 'second' } as const)

/**
 * A clock that moves only when told to and says when a timer is armed on it.
 * The phase timers run on it: a test moves it past a phase's limit once the
 * attempt has armed that phase's timer, instead of waiting the limit out in
 * real time (and however late a busy machine fires it). What is tested is
 * what the client does after the timeout, not when it fires (phases.test.ts).
 */
class PhaseClock extends ManualClock {
  readonly #waiting: { ms: number; resolve: () => void }[] = []

  override setTimeout(callback: () => void, ms: number): unknown {
    const handle = super.setTimeout(callback, ms)
    for (const waiter of [...this.#waiting]) {
      if (waiter.ms !== ms) continue
      this.#waiting.splice(this.#waiting.indexOf(waiter), 1)
      waiter.resolve()
    }
    return handle
  }

  /** Resolves when a timer of `ms` is next armed. */
  armed(ms: number): Promise<void> {
    return new Promise((resolve) => this.#waiting.push({ ms, resolve }))
  }
}

/**
 * A client whose headers phase is limited to `ms` on a `PhaseClock`, and its
 * clock. `timeOut(server)`, called before the request, moves the clock past
 * `ms` once the first attempt has reached `server` and armed its headers
 * timer: that attempt (the one `hangThenAnswer` never answers) times out.
 */
function headersLimited(ms: number, options: Parameters<typeof createFetch>[0] = {}) {
  const clock = new PhaseClock()
  return {
    clock,
    fetch: client({ ...options, headersTimeoutMs: ms, clock }),
    timeOut: async (server: FaultServer) => {
      await Promise.all([clock.armed(ms), server.request(0)])
      clock.advance(ms)
    },
  }
}

afterEach(async () => {
  events.stop()
  await Promise.all(closers.map((c) => c.close()))
  closers = []
})

describe('fast connect failure', () => {
  // A refused connect measured as fast: see support/frozenClock.ts.
  const frozen = frozenClock

  it('a connect failure in under 50 ms is retried once, and the retry can succeed', async () => {
    events = recordEgress()
    const server = await serve({ type: 'respond', body: 'hello' })
    // 127.0.0.2 is loopback too, but nothing listens there on this port: refused at once.
    const answers = ['127.0.0.2', '127.0.0.1']
    const lookup: LookupFunction = (_h, _o, callback) => callback(null, answers.shift()!, 4)
    const res = await client({ lookup, clock: frozen })(`http://svc.test:${server.port}/`)
    expect(await res.text()).toBe('hello')
    expect(events.attempts.map((a) => a.attempt)).toEqual([1, 2])
    expect(events.retries).toMatchObject([{ attempt: 2, reason: 'CONNECT_FAILED', delayMs: 0 }])
    expect(events.ends[0]).toMatchObject({ errorCode: 'CONNECT_FAILED', phase: 'connect' })
  })

  it('is retried only once: a second fast failure is thrown', async () => {
    events = recordEgress()
    const lookup: LookupFunction = (_h, _o, callback) => callback(null, '127.0.0.2', 4)
    const server = await serve({ type: 'respond' })
    const error = await rejection(
      client({ lookup, clock: frozen })(`http://svc.test:${server.port}/`),
    )
    expect(isConnectError(error)).toBe(true)
    expect(events.attempts).toHaveLength(2)
    expect(events.skipped).toMatchObject([{ attempt: 2, why: 'already-retried' }])
  })

  it('a slow connect failure (reset after 100 ms) is not retried', async () => {
    events = recordEgress()
    const resetting = await tcpFaultServer({ mode: 'reset', afterMs: 100 })
    closers.push(resetting)
    const error = await rejection(client()(resetting.httpsUrl))
    expect(error).toMatchObject({ code: 'CONNECT_FAILED', fast: false })
    expect(events.attempts).toHaveLength(1)
    expect(events.skipped).toMatchObject([{ why: 'slow-connect-failure' }])
  })
})

describe('headers timeout with 0 bytes', () => {
  it('is retried once for an idempotent method, and the retry can succeed', async () => {
    events = recordEgress()
    const server = await serve(hangThenAnswer)
    const { fetch, timeOut } = headersLimited(150)
    void timeOut(server)
    const res = await fetch(server.url, { method: 'PUT', body: 'v' })
    expect(await res.text()).toBe('second')
    expect(server.records).toHaveLength(2)
    expect(events.retries).toMatchObject([{ reason: 'HEADERS_TIMEOUT', attempt: 2 }])
    // The first attempt was abandoned: its server saw the client go.
    expect((await server.clientGone(0)).workingWhenClientLeft).toBe(true)
  })

  it('is not retried for a POST without an Idempotency-Key', async () => {
    events = recordEgress()
    const server = await serve(hangThenAnswer)
    const { fetch, timeOut } = headersLimited(150)
    void timeOut(server)
    const error = await rejection(fetch(server.url, { method: 'POST', body: 'v' }))
    expect(isHeadersTimeout(error)).toBe(true)
    expect(server.records).toHaveLength(1)
    expect(events.skipped).toMatchObject([{ reason: 'HEADERS_TIMEOUT', why: 'not-idempotent' }])
  })

  it('is retried for a POST carrying an Idempotency-Key', async () => {
    const server = await serve(hangThenAnswer)
    events = recordEgress()
    const { fetch, timeOut } = headersLimited(150)
    void timeOut(server)
    const res = await fetch(server.url, {
      method: 'POST',
      body: 'v',
      headers: { 'Idempotency-Key': 'op-42' },
    })
    expect(await res.text()).toBe('second')
    expect(server.records[1]?.headers['idempotency-key']).toBe('op-42')
  })

  it('emptyRead: true widens the rule to any method', async () => {
    events = recordEgress()
    const server = await serve(hangThenAnswer)
    const { fetch, timeOut } = headersLimited(150, { retry: { emptyRead: true } })
    void timeOut(server)
    const res = await fetch(server.url, { method: 'POST', body: 'v' })
    expect(await res.text()).toBe('second')
  })

  it('emptyRead: false (per call) forbids it even for GET', async () => {
    events = recordEgress()
    const server = await serve(hangThenAnswer)
    const { fetch, timeOut } = headersLimited(150)
    void timeOut(server)
    const error = await rejection(fetch(server.url, { retry: { emptyRead: false } }))
    expect(isHeadersTimeout(error)).toBe(true)
    expect(server.records).toHaveLength(1)
    expect(events.skipped).toMatchObject([{ why: 'retry-disabled' }])
  })

  it('a one-shot streamed body is never sent twice', async () => {
    events = recordEgress()
    const server = await serve(hangThenAnswer)
    const body = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('once'))
        c.close()
      },
    })
    const { fetch, timeOut } = headersLimited(150)
    void timeOut(server)
    const error = await rejection(fetch(server.url, { method: 'PUT', body, duplex: 'half' }))
    expect(isHeadersTimeout(error)).toBe(true)
    expect(events.skipped).toMatchObject([{ why: 'body-not-replayable' }])
  })

  it('each attempt recomputes x-deadline-remaining-ms just before it is sent', async () => {
    events = recordEgress()
    const server = await serve(hangThenAnswer)
    const { clock, fetch, timeOut } = headersLimited(200)
    void timeOut(server)
    await (await fetch(server.url, { deadline: Deadline.after(3000, { clock }) })).text()
    const first = Number(server.records[0]?.headers['x-deadline-remaining-ms'])
    const second = Number(server.records[1]?.headers['x-deadline-remaining-ms'])
    expect(first).toBeLessThanOrEqual(3000)
    // The first attempt's 200 ms headers phase is all that passed between the two.
    expect(first - second).toBe(200)
    expect(events.attempts.map((a) => a.headerMs)).toEqual([first, second])
  })

  it('is never retried past the deadline: with under minBudgetMs left it stops', async () => {
    events = recordEgress()
    const server = await serve(hangThenAnswer)
    const { clock, fetch, timeOut } = headersLimited(150, { minBudgetMs: 100 })
    void timeOut(server)
    const error = await rejection(fetch(server.url, { deadline: Deadline.after(200, { clock }) }))
    expect(isHeadersTimeout(error)).toBe(true)
    expect(server.records).toHaveLength(1)
    expect(events.skipped).toMatchObject([{ why: 'no-budget' }])
  })
})

describe('a connection closed before any response byte', () => {
  // The stale keep-alive race: the server closed an idle socket just as the
  // request was written on it. Its view from the client — "other side closed"
  // (a FIN) or ECONNRESET (an RST), no byte back — is this fault's.
  const closeThenAnswer = (type: 'close' | 'reset') => (_req: unknown, index: number) =>
    index === 0 ? ({ type } as const) : ({ type: 'respond', body: 'second' } as const)

  it.each([
    ['close', 'UND_ERR_SOCKET'],
    ['reset', 'ECONNRESET'],
  ] as const)(
    '(%s) is retried once for an idempotent method, as a headers timeout with 0 bytes is',
    async (type, reason) => {
      events = recordEgress()
      const server = await serve(closeThenAnswer(type))
      const res = await client()(server.url)
      expect(await res.text()).toBe('second')
      expect(server.records).toHaveLength(2)
      expect(events.retries).toMatchObject([{ reason, attempt: 2, delayMs: 0 }])
    },
  )

  it('is not retried for a POST without an Idempotency-Key (the server may have acted on it); emptyRead: true retries it', async () => {
    events = recordEgress()
    const server = await serve(closeThenAnswer('close'))
    const error = await rejection(client()(server.url, { method: 'POST', body: 'v' }))
    expect(error).toMatchObject({ code: 'UND_ERR_SOCKET' })
    expect(events.skipped).toMatchObject([{ reason: 'UND_ERR_SOCKET', why: 'not-idempotent' }])
    server.setPlan(closeThenAnswer('close'))
    const res = await client({ retry: { emptyRead: true } })(server.url, {
      method: 'POST',
      body: 'v',
    })
    expect(await res.text()).toBe('second')
  })

  it('is retried once only: a second close is thrown, `already-retried`', async () => {
    events = recordEgress()
    const server = await serve({ type: 'close' })
    const error = await rejection(client()(server.url))
    expect(error).toMatchObject({ code: 'UND_ERR_SOCKET' })
    expect(server.records).toHaveLength(2)
    expect(events.skipped).toMatchObject([{ attempt: 2, why: 'already-retried' }])
  })
})

describe('after the first byte', () => {
  it('a body timeout is never retried, even for GET', async () => {
    events = recordEgress()
    const server = await serve({ type: 'bytes-then-stall', bytes: 10 })
    const clock = new PhaseClock()
    const res = await client({ bodyTimeoutMs: 150, clock })(server.url)
    // The body phase (and its 150 ms timer) began with the headers.
    clock.advance(150)
    const error = await rejection(res.text())
    expect(isBodyTimeout(error)).toBe(true)
    expect(server.records).toHaveLength(1)
    expect(events.retries).toHaveLength(0)
    expect(events.skipped).toMatchObject([{ reason: 'BODY_TIMEOUT', why: 'after-first-byte' }])
  })

  it('headers then silence is after the first byte too: not retried', async () => {
    events = recordEgress()
    const server = await serve({ type: 'headers-then-stall' })
    const clock = new PhaseClock()
    const res = await client({ bodyTimeoutMs: 150, clock })(server.url)
    clock.advance(150) // the body phase began with the headers
    expect(isBodyTimeout(await rejection(res.text()))).toBe(true)
    expect(server.records).toHaveLength(1)
    expect(events.skipped).toMatchObject([{ why: 'after-first-byte' }])
  })
})

describe('statuses', () => {
  it('a 504 carrying x-deadline-expired: 1 is never retried, even when 504 is listed', async () => {
    events = recordEgress()
    const server = await serve({
      type: 'respond',
      status: 504,
      headers: { [DEADLINE_EXPIRED_HEADER]: '1' },
    })
    const res = await client({ retry: { statuses: [504] } })(server.url)
    expect(res.status).toBe(504)
    expect(server.records).toHaveLength(1)
    expect(events.skipped).toMatchObject([{ reason: 'HTTP_504', why: 'upstream-deadline' }])
  })

  it('a listed 504 without the marker is retried once (the control for the rule above)', async () => {
    events = recordEgress()
    const server = await serve((_r, i) =>
      i === 0 ? { type: 'respond', status: 504 } : { type: 'respond', body: 'ok' },
    )
    const res = await client({ retry: { statuses: [504] } })(server.url)
    expect(res.status).toBe(200)
    expect(server.records).toHaveLength(2)
  })

  it('statuses are returned, not retried, by default', async () => {
    events = recordEgress()
    const server = await serve({ type: 'retry-after', status: 503, retryAfter: 0 })
    const res = await client()(server.url)
    expect(res.status).toBe(503)
    expect(res.headers.get('retry-after')).toBe('0')
    expect(server.records).toHaveLength(1)
  })

  it('a Retry-After longer than the budget left is not waited for', async () => {
    events = recordEgress()
    const server = await serve({ type: 'retry-after', status: 429, retryAfter: 5 })
    // On a clock nobody moves: 1000 ms are left when the 429 comes, however long it took.
    const res = await client({ retry: { statuses: [429] } })(server.url, {
      deadline: Deadline.after(1000, { clock: new ManualClock() }),
    })
    expect(res.status).toBe(429)
    expect(server.records).toHaveLength(1)
    expect(events.skipped).toMatchObject([{ why: 'no-budget' }])
  })

  it('without a deadline, a Retry-After of a day is not slept: the status is returned at once, saying why', async () => {
    events = recordEgress()
    const server = await serve({ type: 'retry-after', status: 503, retryAfter: 86_400 })
    const started = performance.now()
    const res = await client({ retry: { statuses: [503] } })(server.url)
    expect(res.status).toBe(503)
    expect(performance.now() - started).toBeLessThan(5000) // not 24 h; not even the 60 s cap
    expect(server.records).toHaveLength(1)
    expect(events.retries).toHaveLength(0)
    expect(events.skipped).toMatchObject([{ reason: 'HTTP_503', why: 'retry-after-too-long' }])
  })

  it('maxRetryAfterMs sets the longest Retry-After waited out', async () => {
    events = recordEgress()
    const server = await serve((_r, i) =>
      i === 0
        ? { type: 'retry-after', status: 503, retryAfter: 2 }
        : { type: 'respond', body: 'ok' },
    )
    const res = await client({ retry: { statuses: [503], maxRetryAfterMs: 1000 } })(server.url)
    expect(res.status).toBe(503)
    expect(events.skipped).toMatchObject([{ why: 'retry-after-too-long' }])
    expect(server.records).toHaveLength(1)
    expect(() => client({ retry: { maxRetryAfterMs: -1 } })).toThrow(/maxRetryAfterMs/)
  })

  it('by default a Retry-After of up to 60 s is waited out and one of 61 s is not', async () => {
    events = recordEgress()
    // The waits run on a clock that moves only when told to, and that
    // records the delay of every timer armed on it.
    const clock = new (class extends ManualClock {
      readonly delays: number[] = []
      override setTimeout(callback: () => void, ms: number): unknown {
        this.delays.push(ms)
        return super.setTimeout(callback, ms)
      }
    })(performance.now())
    const fetch = client({ clock, retry: { statuses: [503] } })
    const within = await serve((_r, i) =>
      i === 0
        ? { type: 'retry-after', status: 503, retryAfter: 60 }
        : { type: 'respond', body: 'ok' },
    )
    const retrying = nextRetry()
    const pending = fetch(within.url)
    expect((await retrying).delayMs).toBe(60_000)
    // The wait is armed a few ticks after the retry is announced: move the
    // clock once it is, by what it armed. Its timer, not just any (the 503's
    // phase timers run on this clock too), and not a fixed 60,000 ms: the
    // wait arms the time left, which with a fractional clock start reads a
    // float step either side of 60,000 (59,999.99999999999: its end less its
    // start, in floats), and a fixed 60,000 ms step could stop short of one
    // armed a step over. `> 59_999`, not `>= 60_000`, for a step under:
    // still no phase timer's delay, and it fails for a wait that is not ~60 s.
    await vi.waitFor(() => expect(Math.max(...clock.delays)).toBeGreaterThan(59_999), {
      timeout: 10_000,
    })
    clock.advance(Math.max(...clock.delays))
    const res = await pending
    expect(await res.text()).toBe('ok')
    expect(within.records).toHaveLength(2)

    const beyond = await serve({ type: 'retry-after', status: 503, retryAfter: 61 })
    const refused = await fetch(beyond.url)
    expect(refused.status).toBe(503)
    expect(beyond.records).toHaveLength(1)
    expect(events.skipped).toMatchObject([{ why: 'retry-after-too-long' }])
  })

  it('a pending retry ends at once when the caller aborts, and nothing is sent after that', async () => {
    events = recordEgress()
    const server = await serve((_r, i) =>
      i === 0 ? { type: 'retry-after', status: 503, retryAfter: 1 } : { type: 'respond' },
    )
    const clock = new ManualClock(performance.now())
    const controller = new AbortController()
    const retrying = nextRetry()
    const pending = client({ clock, retry: { statuses: [503] } })(server.url, {
      signal: controller.signal,
    })
    await retrying // the 503 came back and a retry after 1 s was decided
    controller.abort()
    expect(((await rejection(pending)) as Error).name).toBe('AbortError')
    // Had the retry survived the abort, moving past its wait would send it
    // now, ahead of the control request below on the same server.
    clock.advance(2000)
    await (await client()(server.url)).text()
    expect(server.records).toHaveLength(2) // the 503, then the control: no retry
  })

  it('a spent budget stops at once: no retry, DEADLINE_EXCEEDED', async () => {
    events = recordEgress()
    const server = await serve({ type: 'hang' })
    const error = await rejection(client()(server.url, { deadline: Deadline.after(150) }))
    expect(isDeadlineExceeded(error)).toBe(true)
    expect(events.skipped).toMatchObject([{ reason: 'DEADLINE_EXCEEDED', why: 'no-budget' }])
  })
})

describe('retryAfterMs', () => {
  it("is core's, the one Retry-After reader fetch's retry and llm's hints share (its table: packages/core/test/retryAfterMs.test.ts)", () => {
    expect(retryAfterMs).toBe(coreRetryAfterMs)
  })
})
