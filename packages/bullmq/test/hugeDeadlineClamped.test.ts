import { currentDeadline, Deadline } from '@hourglass/core'
import type { Job } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { addWithDeadline, withDeadline } from '../src/index.js'
import { finished } from './support/observe.js'
import { available, redisNowMs, useRedisQueues } from './support/redisQueues.js'

// A deadline further away than maxMs is cut to it, budget and expiry alike.
// The expiry was cut as `expiresAt − (remaining − maxMs)`: exact for 1e15 ms,
// but in doubles a day is lost next to 1e24 and more (`Deadline.after(
// Number.MAX_VALUE)` as "practically never", a budget computed from an
// untrusted value): the difference came out 0, the expiry "the clock's
// epoch", and every worker failed the job unrun as hours past its
// deadline. Cut from the clock reading instead: now + maxMs.

const DAY_MS = 86_400_000

const storedOf = (job: Job) =>
  (job.opts as unknown as { hourglass?: { expiresAtMs: number; budgetMs: number } }).hourglass

describe.skipIf(!available)('addWithDeadline: a deadline far beyond maxMs', () => {
  const redis = useRedisQueues()

  for (const ms of [1e24, 1e300, Number.MAX_VALUE]) {
    it(`Deadline.after(${ms}) is stored as a day from now, and runs`, async () => {
      const { queue, events, name } = await redis.queue()
      const client = redis.client()
      const before = await redisNowMs(client)
      const job = await addWithDeadline(queue, 'far', {}, { deadline: Deadline.after(ms) })
      const after = await redisNowMs(client)
      const stored = storedOf((await queue.getJob(job.id!))!)!
      expect(stored.budgetMs).toBe(DAY_MS)
      expect(stored.expiresAtMs).toBeGreaterThanOrEqual(Math.floor(before + DAY_MS))
      expect(stored.expiresAtMs).toBeLessThanOrEqual(after + DAY_MS)
      let seen: number | undefined
      redis.worker(
        name,
        withDeadline(async () => {
          seen = currentDeadline()?.remaining()
        }),
      )
      expect(await finished(job, events, queue)).toMatchObject({ state: 'completed' })
      expect(seen).toBeGreaterThan(0)
      expect(seen).toBeLessThanOrEqual(DAY_MS)
    })
  }
})
