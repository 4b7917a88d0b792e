import { type Clock, currentDeadline, MAX_TIMER_MS, systemClock } from '@hourglass/core'
import type { JobsOptions } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { bullmqChannels, withDeadline } from '../src/index.js'
import { collect, finished } from './support/observe.js'
import { available, redisNowMs, useRedisQueues } from './support/redisQueues.js'

// A worker's `maxMs` (what a job that recorded no budget is given) was taken
// whole, while addWithDeadline's is cut to 2³¹−1 ms and a recorded budget
// beyond that vouches for nothing: `maxMs: 1e12` gave a foreign job 31
// years, and said so as its budget. Cut to 2³¹−1 as addWithDeadline's is.
// Nothing here measures time.

/**
 * The system's time, with Node's own timers as they are (no cut at 2³¹−1:
 * nothing says a clock must cut them), recording the longest asked for.
 */
class RawClock implements Clock {
  longest = 0
  now(): number {
    return systemClock.now()
  }
  setTimeout(callback: () => void, ms: number): unknown {
    this.longest = Math.max(this.longest, ms)
    return setTimeout(callback, ms).unref()
  }
  clearTimeout(handle: unknown): void {
    clearTimeout(handle as NodeJS.Timeout)
  }
}

describe.skipIf(!available)('withDeadline: a maxMs past 2³¹−1 ms', () => {
  const redis = useRedisQueues()

  it('gives a job that recorded no budget 2³¹−1 ms at most, and no timer longer than Node has', async () => {
    const { queue, events, name } = await redis.queue()
    const starts = collect(bullmqChannels.start)
    const clock = new RawClock()
    let seen: { remaining: number; done: boolean } | undefined
    redis.worker(
      name,
      withDeadline(
        async () => {
          const deadline = currentDeadline()!
          seen = { remaining: deadline.remaining(), done: deadline.done }
        },
        { maxMs: 1e12, clock },
      ),
    )
    const now = await redisNowMs(redis.client())
    // Another producer's job: an expiry far away, no budget recorded.
    const job = await queue.add('foreign', {}, {
      hourglass: { expiresAtMs: now + 1e13 },
    } as JobsOptions)
    expect(await finished(job, events, queue)).toMatchObject({ state: 'completed' })
    expect(seen?.done).toBe(false)
    expect(seen?.remaining).toBeGreaterThan(0)
    expect(seen?.remaining).toBeLessThanOrEqual(MAX_TIMER_MS)
    expect(starts[0]?.remainingMs).toBeLessThanOrEqual(MAX_TIMER_MS)
    expect(clock.longest).toBeLessThanOrEqual(MAX_TIMER_MS)
  })
})

describe('withDeadline: maxMs is checked against minBudgetMs once cut', () => {
  const job = async () => 1

  it('refuses a minBudgetMs over the cut maxMs: every job would be refused unrun', () => {
    // Accepted before: no job records more than 2³¹−1 ms, so none had enough.
    expect(() => withDeadline(job, { maxMs: 1e12, minBudgetMs: 1e12 })).toThrow(
      new RangeError(
        `withDeadline: maxMs (1000000000000, cut to ${MAX_TIMER_MS}) must not be less than minBudgetMs (1000000000000)`,
      ),
    )
  })

  it('takes a maxMs past 2³¹−1 ms (cut), as addWithDeadline does', () => {
    expect(() => withDeadline(job, { maxMs: 1e12 })).not.toThrow()
    expect(() => withDeadline(job, { maxMs: 1e12, minBudgetMs: MAX_TIMER_MS })).not.toThrow()
  })
})
