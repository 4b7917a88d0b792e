import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Deadline, ManualClock } from '@hourglass/core'
import { Agent, request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { createFetch, deadlineInterceptor, fetchChannels } from '../src/index.js'
import { type EgressEvents, nextRetry, recordEgress } from './helpers.js'

let server: Server | undefined
let events: EgressEvents | undefined
afterEach(async () => {
  events?.stop()
  if (server) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
  }
  server = undefined
})

/** Answers 503 with Retry-After sent twice (an app and a proxy in front of it both set it). */
async function busyTwice(seconds: number): Promise<{ url: string; requests: () => number }> {
  let requests = 0
  server = createServer((_req, res) => {
    requests++
    res.statusCode = 503
    res.setHeader('retry-after', [String(seconds), String(seconds)])
    res.end('busy')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}/`, requests: () => requests }
}

describe('a Retry-After field sent twice', () => {
  it('createFetch waits for its first value, as the interceptor does: 30 s does not fit a 2 s deadline, so the 503 is the answer', async () => {
    events = recordEgress()
    const busy = await busyTwice(30)
    const fetch = createFetch({ retry: { statuses: [503] } })
    try {
      // fetch's Headers join the two fields: "30, 30".
      const res = await fetch(busy.url, { deadline: Deadline.after(2000) })
      expect(res.status).toBe(503)
      await res.body?.cancel()
    } finally {
      await fetch.close()
    }
    expect(busy.requests()).toBe(1)
    expect(events.retries).toHaveLength(0)
    expect(events.skipped).toMatchObject([{ reason: 'HTTP_503', why: 'no-budget' }])
  })

  it('the interceptor reads the same', async () => {
    events = recordEgress()
    const busy = await busyTwice(30)
    const agent = new Agent()
    const dispatcher = agent.compose(deadlineInterceptor({ retry: { statuses: [503] } }))
    try {
      const res = await request(busy.url, { dispatcher, deadline: Deadline.after(2000) } as never)
      expect(res.statusCode).toBe(503)
      await res.body.dump()
    } finally {
      await agent.close()
    }
    expect(busy.requests()).toBe(1)
    expect(events.skipped).toMatchObject([{ reason: 'HTTP_503', why: 'no-budget' }])
  })
})

describe('a Retry-After that ends exactly at the deadline', () => {
  it('with minBudgetMs: 0 is not waited for: the 503 is the answer at once, no retry announced', async () => {
    events = recordEgress()
    const busy = await busyTwice(1)
    const clock = new ManualClock()
    const deadline = Deadline.after(1000, { clock })
    // Were a retry announced, its wait would end with the deadline: time is
    // moved there, so the call settles either way.
    const onRetry = () => clock.advance(1000)
    fetchChannels.retry.subscribe(onRetry)
    const fetch = createFetch({ minBudgetMs: 0, retry: { statuses: [503] } })
    try {
      const outcome = await fetch(busy.url, { deadline }).then(
        async (res) => {
          await res.body?.cancel()
          return res.status
        },
        (error: { code?: string }) => error.code,
      )
      expect(outcome).toBe(503)
      expect(events.retries).toEqual([])
      expect(events.skipped.map((m) => m.why)).toEqual(['no-budget'])
      expect(busy.requests()).toBe(1)
    } finally {
      fetchChannels.retry.unsubscribe(onRetry)
      deadline.dispose()
      await fetch.close()
    }
  })
})

describe('an x-deadline-expired field sent twice', () => {
  it('createFetch still never retries that 504 (fetch joins it to "1, 1")', async () => {
    events = recordEgress()
    let requests = 0
    server = createServer((_req, res) => {
      requests++
      res.statusCode = 504
      res.setHeader('x-deadline-expired', ['1', '1'])
      res.end('{"error":"deadline_exceeded"}')
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = server.address() as AddressInfo
    const fetch = createFetch({ retry: { statuses: [504] } })
    try {
      const res = await fetch(`http://127.0.0.1:${port}/`, { deadline: Deadline.after(2000) })
      expect(res.status).toBe(504)
      await res.body?.cancel()
    } finally {
      await fetch.close()
    }
    expect(requests).toBe(1)
    expect(events.retries).toHaveLength(0)
    expect(events.skipped).toMatchObject([{ reason: 'HTTP_504', why: 'upstream-deadline' }])
  })
})

describe('retry: false', () => {
  it('publishes no skipped retries: it asked for no retry decisions', async () => {
    events = recordEgress()
    const busy = await busyTwice(1)
    const fetch = createFetch({ retry: false })
    try {
      const res = await fetch(busy.url)
      expect(res.status).toBe(503)
      await res.body?.cancel()
    } finally {
      await fetch.close()
    }
    expect(busy.requests()).toBe(1)
    expect(events.retries).toEqual([])
    expect(events.skipped).toEqual([])
  })
})

describe('fetch.close()', () => {
  it('may be called twice (two shutdown hooks): the second resolves like the first', async () => {
    const fetch = createFetch()
    await fetch.close()
    await expect(fetch.close()).resolves.toBeUndefined()
  })

  it('ends a call waiting to retry at once, with undici’s ClientClosedError: it slept out its Retry-After, keeping the process up, then failed', async () => {
    const busy = await busyTwice(30)
    // A manual clock nobody moves: the 30 s wait ends by close() or never.
    const fetch = createFetch({ retry: { statuses: [503] }, clock: new ManualClock() })
    const retried = nextRetry()
    const call = fetch(busy.url).then(
      () => 'answered',
      (error: unknown) => error,
    )
    expect(await retried).toMatchObject({ reason: 'HTTP_503', delayMs: 30_000 })
    await fetch.close()
    const settled = await Promise.race([call, turns(1000).then(() => 'still waiting to retry')])
    expect(settled).toMatchObject({
      code: 'UND_ERR_CLOSED',
      message: expect.stringMatching(/close\(\)/),
    })
    expect(busy.requests()).toBe(1)
  })

  it('leaves a call of a fetch built on your dispatcher waiting: close() does not close yours', async () => {
    const busy = await busyTwice(30)
    const clock = new ManualClock()
    const agent = new Agent()
    const fetch = createFetch({ retry: { statuses: [503] }, clock, dispatcher: agent })
    try {
      const retried = nextRetry()
      const call = fetch(busy.url).then((res) => res.status)
      await retried
      await fetch.close()
      // The retry's wait is armed a few microtasks after its event.
      for (let i = 0; i < 1000 && clock.pendingTimers === 0; i++) await turns(1)
      // The wait's timer, and its look at your dispatcher (still open: it goes on).
      expect(clock.pendingTimers).toBe(2)
      clock.advance(30_001)
      expect(await call).toBe(503)
      expect(busy.requests()).toBe(2)
    } finally {
      await agent.close()
    }
  })
})

async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve))
}

describe('a retry announced and then abandoned during its Retry-After wait', () => {
  it('createFetch: the caller aborting says so, retry-skipped `aborted`, and sends nothing', async () => {
    events = recordEgress()
    const busy = await busyTwice(5)
    // A manual clock nobody moves: the wait ends by the abort or never.
    const fetch = createFetch({ retry: { statuses: [503] }, clock: new ManualClock() })
    const ac = new AbortController()
    try {
      const retried = nextRetry()
      const call = fetch(busy.url, { signal: ac.signal }).then(
        () => 'answered',
        (error: unknown) => error,
      )
      await retried
      ac.abort()
      expect(await call).toMatchObject({ name: 'AbortError' })
    } finally {
      await fetch.close()
    }
    expect(busy.requests()).toBe(1)
    expect(events.retries).toMatchObject([{ attempt: 2, reason: 'HTTP_503' }])
    expect(events.skipped).toMatchObject([{ attempt: 1, reason: 'HTTP_503', why: 'aborted' }])
    expect(events.attempts.map((m) => m.retryReason)).toEqual([undefined])
  })

  it('the interceptor: the deadline cancelled says so too; the deadline running out is `no-budget`', async () => {
    events = recordEgress()
    const busy = await busyTwice(5)
    const clock = new ManualClock()
    const agent = new Agent()
    const dispatcher = agent.compose(deadlineInterceptor({ retry: { statuses: [503] }, clock }))
    const cancelled = Deadline.after(60_000, { clock })
    const expiring = Deadline.after(6000, { clock })
    try {
      let retried = nextRetry()
      const first = request(busy.url, { dispatcher, deadline: cancelled } as never).catch(
        (error: unknown) => error,
      )
      await retried
      cancelled.cancel()
      expect(await first).toMatchObject({ name: 'AbortError' })
      retried = nextRetry()
      const second = request(busy.url, { dispatcher, deadline: expiring } as never).catch(
        (error: unknown) => error,
      )
      await retried
      clock.advance(6000)
      expect(await second).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
    } finally {
      await agent.close()
    }
    expect(busy.requests()).toBe(2)
    expect(events.skipped).toMatchObject([
      { attempt: 1, reason: 'HTTP_503', why: 'aborted' },
      { attempt: 1, reason: 'HTTP_503', why: 'no-budget' },
    ])
  })

  it('a retry sent names its reason on its attempt (what otel counts as retried)', async () => {
    events = recordEgress()
    const busy = await busyTwice(0)
    const fetch = createFetch({ retry: { statuses: [503] } })
    try {
      const res = await fetch(busy.url)
      expect(res.status).toBe(503)
      await res.body?.cancel()
    } finally {
      await fetch.close()
    }
    expect(events.attempts.map((m) => [m.attempt, m.retryReason])).toEqual([
      [1, undefined],
      [2, 'HTTP_503'],
    ])
  })
})
