import { MAX_TIMER_MS } from '@hourglass/core'
import type { JobsOptions } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { bullmqChannels, withDeadline } from '../src/index.js'
import { collect, finished } from './support/observe.js'
import { available, redisNowMs, useRedisQueues } from './support/redisQueues.js'

// A recorded budget beyond 2³¹−1 ms (no addWithDeadline records one: another
// producer's, or a hand's) vouches for nothing: the worker runs the job as
// one that recorded none, bounded by its maxMs, and its errors say "no budget
// recorded". Its messages still said `budgetMs: 1e300` beside a deadline of
// an hour: a span attribute no deadline had, and a budget the errors deny.
describe.skipIf(!available)('a recorded budget beyond 2³¹−1 ms, in the messages', () => {
  const redis = useRedisQueues()

  for (const budgetMs of [MAX_TIMER_MS + 1, 1e300]) {
    it(`budgetMs ${budgetMs} is reported as none recorded (undefined), as the worker treats it`, async () => {
      const client = redis.client()
      const { queue, events, name } = await redis.queue()
      const starts = collect(bullmqChannels.start)
      const ends = collect(bullmqChannels.end)
      redis.worker(
        name,
        withDeadline(async () => 'ran', { maxMs: 60_000 }),
      )
      const now = await redisNowMs(client)
      const hourglass = { expiresAtMs: now + 3_600_000, budgetMs }
      const job = await queue.add('far', {}, { hourglass } as JobsOptions)
      expect(await finished(job, events, queue)).toMatchObject({ state: 'completed' })
      expect(starts).toHaveLength(1)
      expect(starts[0]?.budgetMs).toBeUndefined()
      // What it was given: the worker's maxMs, not the recorded figure.
      expect(starts[0]?.remainingMs).toBeLessThanOrEqual(60_000)
      expect(starts[0]?.deadline.budgetMs).toBeLessThanOrEqual(60_000)
      expect(ends[0]?.budgetMs).toBeUndefined()
    })
  }

  it('a budget of exactly 2³¹−1 ms vouches, and is reported as recorded', async () => {
    const client = redis.client()
    const { queue, events, name } = await redis.queue()
    const starts = collect(bullmqChannels.start)
    redis.worker(
      name,
      withDeadline(async () => 'ran'),
    )
    const now = await redisNowMs(client)
    const hourglass = { expiresAtMs: now + 60_000, budgetMs: MAX_TIMER_MS }
    const job = await queue.add('far', {}, { hourglass } as JobsOptions)
    expect(await finished(job, events, queue)).toMatchObject({ state: 'completed' })
    expect(starts[0]?.budgetMs).toBe(MAX_TIMER_MS)
  })
})
