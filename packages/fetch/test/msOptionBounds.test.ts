import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { type Clock, MAX_TIMER_MS, systemClock, type TimerOptions } from '@hourglass/core'
import { Agent, request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createConnector, createFetch, deadlineInterceptor } from '../src/index.js'

// Node's timers overflow past 2³¹−1 ms and fire after 1 ms. Nothing here
// measures time: the clock records what it is asked for.

function messageOf(make: () => unknown): string {
  try {
    make()
  } catch (error) {
    expect(error).toBeInstanceOf(RangeError)
    return (error as Error).message
  }
  throw new Error('expected the options to be refused')
}

describe('minBudgetMs', () => {
  // A timestamp where a duration belongs (`Date.now()`, ~1.8e12) was
  // accepted: every call under a deadline then failed DEADLINE_EXCEEDED
  // unsent (0 requests sent), at run time, never at boot. The gRPC client
  // refuses it so (below 2³¹−1 ms, the longest deadline an ingress gives).
  it.each([
    ['createFetch()', (minBudgetMs: number) => createFetch({ minBudgetMs })],
    ['deadlineInterceptor()', (minBudgetMs: number) => deadlineInterceptor({ minBudgetMs })],
    ['createConnector()', (minBudgetMs: number) => createConnector({ minBudgetMs })],
  ])('%s refuses one of 2³¹−1 ms or more at creation, naming itself', (owner, make) => {
    // The connector reads no minBudgetMs: it names what would refuse the calls.
    const refuser =
      owner === 'createConnector()'
        ? 'a deadlineInterceptor() or createFetch() given these options'
        : owner
    for (const value of [1e12, MAX_TIMER_MS]) {
      expect(messageOf(() => make(value))).toBe(
        `minBudgetMs must be a finite number ≥ 0 and < ${MAX_TIMER_MS} (ms, 2³¹−1), got ${value}: ${refuser} would refuse every call under a deadline unsent`,
      )
    }
  })

  it('takes one just under it, and the bounds it had (≥ 0, finite)', async () => {
    const fetch = createFetch({ minBudgetMs: MAX_TIMER_MS - 1 })
    await fetch.close()
    expect(() => deadlineInterceptor({ minBudgetMs: 0 })).not.toThrow()
    expect(messageOf(() => createFetch({ minBudgetMs: -1 }))).toBe(
      'minBudgetMs must be a finite number ≥ 0 (ms), got -1',
    )
    expect(messageOf(() => createFetch({ minBudgetMs: Number.POSITIVE_INFINITY }))).toBe(
      'minBudgetMs must be a finite number ≥ 0 (ms), got Infinity',
    )
  })
})

/** The system clock (it cuts its own timers), recording the longest timer asked of it. */
class RecordingClock implements Clock {
  readonly realTime = true
  longest = 0
  now(): number {
    return systemClock.now()
  }
  setTimeout(callback: () => void, ms: number, options?: TimerOptions): unknown {
    this.longest = Math.max(this.longest, ms)
    return systemClock.setTimeout(callback, ms, options)
  }
  clearTimeout(handle: unknown): void {
    systemClock.clearTimeout(handle)
  }
}

describe('phase limits past 2³¹−1 ms', () => {
  let server: http.Server
  let url: string
  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      res.writeHead(200)
      res.write('a')
      res.end('b')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://localhost:${(server.address() as AddressInfo).port}/`
  })
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve))
  })

  // A clock of the app's own that hands its timers to Node as they are
  // (nothing says a clock must cut them) failed every call at once:
  // `headersTimeoutMs: 1e12` was HEADERS_TIMEOUT 2 ms in, `dnsTimeoutMs`
  // DNS_TIMEOUT, `bodyTimeoutMs` BODY_TIMEOUT at the first pause. Such a
  // limit is cut to 2³¹−1 (24.8 days, effectively none), as the system
  // clock cut it.
  const lookup = (
    _host: string,
    _options: unknown,
    callback: (error: null, address: { address: string; family: number }[]) => void,
  ) => callback(null, [{ address: '127.0.0.1', family: 4 }])

  it.each(['dnsTimeoutMs', 'connectTimeoutMs', 'headersTimeoutMs', 'bodyTimeoutMs'])(
    '%s: 1e12 arms no timer longer than 2³¹−1 ms',
    async (name) => {
      const clock = new RecordingClock()
      const fetch = createFetch({ [name]: 1e12, clock, lookup })
      try {
        const res = await fetch(url)
        expect(await res.text()).toBe('ab')
      } finally {
        await fetch.close()
      }
      expect(clock.longest).toBe(MAX_TIMER_MS)
    },
  )

  it("the interceptor cuts a request's own headersTimeout / bodyTimeout the same way", async () => {
    const clock = new RecordingClock()
    const agent = new Agent({ headersTimeout: 0, bodyTimeout: 0 }).compose(
      deadlineInterceptor({ clock, headersTimeoutMs: 0, bodyTimeoutMs: 0 }),
    )
    try {
      const res = await request(url, {
        dispatcher: agent,
        headersTimeout: 1e12,
        bodyTimeout: 1e12,
      })
      expect(await res.body.text()).toBe('ab')
    } finally {
      await agent.close()
    }
    expect(clock.longest).toBe(MAX_TIMER_MS)
  })
})
