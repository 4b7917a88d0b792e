import { Deadline, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import type { Queue } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { addWithDeadline } from '../src/index.js'
import { available, useRedisQueues } from './support/redisQueues.js'

// `job.changeDelay(ms)` on the job addWithDeadline returned is judged as its
// `delay` was at the add: a delay that ends at or after the job's deadline
// could never run (a worker would fail the job unrun when it came due), and
// is refused with the add's DeadlineExceededError, the job keeping its
// delay. Passed on, changeDelay(60_000) on a job with 5 s left was accepted.

const MINUTE_MS = 60_000

/** When BullMQ will hand the job to a worker: its score in the delayed set (ms × 0x1000). */
async function dueInMs(redis: ReturnType<typeof useRedisQueues>, queue: Queue, id: string) {
  const score = await redis.client().zscore(`bull:${queue.name}:delayed`, id)
  return Math.floor(Number(score) / 0x1000) - Date.now()
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  )
}

describe.skipIf(!available)('job.changeDelay on a job added with a deadline', () => {
  const redis = useRedisQueues()

  it('refuses a delay that outlasts what the job has left and leaves its delay as it was; one that fits is BullMQ’s', async () => {
    const { queue } = await redis.queue()
    const clock = new ManualClock()
    const deadline = Deadline.after(5_000, { clock })
    const job = await addWithDeadline(queue, 'remind', {}, { deadline, delay: 1_000 })

    const refused = await rejection(job.changeDelay(MINUTE_MS))
    expect(isDeadlineExceeded(refused)).toBe(true)
    expect((refused as Error).message).toBe(
      `job.changeDelay: job "remind" (id ${job.id}) was asked for a delay of 60000 ms but has only 5000 ms left of its deadline: it could never run, so its delay is not changed. To run it past this deadline, add it again under its own ({ deadline: Deadline.after(ms) }) or none (Deadline.never())`,
    )
    expect(await dueInMs(redis, queue, job.id!)).toBeLessThanOrEqual(1_000)
    expect(job.delay).toBe(1_000)

    // Within what is left: changed, as BullMQ does it.
    await job.changeDelay(3_000)
    expect(job.delay).toBe(3_000)
    expect(await dueInMs(redis, queue, job.id!)).toBeGreaterThan(1_000)

    // Judged by what is left when it is asked, also once the deadline was
    // released (the request that added the job has ended).
    clock.advance(4_000)
    deadline.dispose()
    await expect(job.changeDelay(2_000)).rejects.toThrow(
      /asked for a delay of 2000 ms but has only 1000 ms left/,
    )
    expect(job.delay).toBe(3_000)
  })

  it('judges by the job’s own budget: a deadline cut to maxMs', async () => {
    const { queue } = await redis.queue()
    const deadline = Deadline.after(MINUTE_MS, { clock: new ManualClock() })
    const job = await addWithDeadline(queue, 'remind', {}, { deadline, delay: 1_000, maxMs: 5_000 })
    await expect(job.changeDelay(10_000)).rejects.toThrow(/only 5000 ms left/)
  })

  it('changes the delay as asked under an observe-only deadline (dark mode refuses nothing), and of a job without a deadline', async () => {
    const { queue } = await redis.queue()
    const observed = Deadline.after(5_000, { clock: new ManualClock(), observe: true })
    const dark = await addWithDeadline(queue, 'dark', {}, { deadline: observed, delay: 1_000 })
    await dark.changeDelay(MINUTE_MS)
    expect(await dueInMs(redis, queue, dark.id!)).toBeGreaterThan(5_000)

    const plain = await addWithDeadline(
      queue,
      'plain',
      {},
      { deadline: Deadline.never(), delay: 1_000 },
    )
    await plain.changeDelay(MINUTE_MS)
    expect(await dueInMs(redis, queue, plain.id!)).toBeGreaterThan(5_000)
  })
})
