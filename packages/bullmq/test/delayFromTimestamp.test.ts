import { Deadline, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { Queue } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { addWithDeadline, bullmqChannels } from '../src/index.js'
import { collect } from './support/observe.js'
import { available, useRedisQueues } from './support/redisQueues.js'

// BullMQ counts a job's `delay` from its `timestamp` option (the job's
// creation time, `Date.now()` when not given): the job is due at
// `timestamp + delay`. addWithDeadline judged the delay from now alone, so a
// delay counted from a timestamp a minute ahead went through under a 5 s
// deadline (the job failed unrun a minute later), and one counted from a
// timestamp in the past, due in a moment, was refused.

const MINUTE_MS = 60_000

/** When BullMQ will hand the job to a worker: its score in the delayed set (ms × 0x1000). */
async function dueInMs(redis: ReturnType<typeof useRedisQueues>, queue: Queue, id: string) {
  const score = await redis.client().zscore(`bull:${queue.name}:delayed`, id)
  return Math.floor(Number(score) / 0x1000) - Date.now()
}

describe.skipIf(!available)('addWithDeadline: a delay counted from the job’s timestamp', () => {
  const redis = useRedisQueues()

  it('refuses a short delay counted from a timestamp ahead of now that ends past the deadline', async () => {
    const { queue } = await redis.queue()
    // A manual clock does not move: the deadline has exactly 5000 ms left.
    const deadline = Deadline.after(5_000, { clock: new ManualClock() })
    const timestamp = Date.now() + MINUTE_MS
    const refused = await addWithDeadline(
      queue,
      'remind',
      {},
      { deadline, delay: 500, timestamp },
    ).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(isDeadlineExceeded(refused)).toBe(true)
    expect((refused as Error).message).toMatch(
      new RegExp(
        `delay of 500 ms counted from its timestamp \\(${timestamp}\\), due in \\d+ ms, but only 5000 ms left.*could never run`,
      ),
    )
    expect(await queue.getJobCounts('delayed', 'wait')).toEqual({ delayed: 0, wait: 0 })
  })

  it('says on refuse the delay that applies, counted from the timestamp: not the delay as given', async () => {
    const { queue } = await redis.queue()
    const refusals = collect(bullmqChannels.refuse)
    const deadline = Deadline.after(5_000, { clock: new ManualClock() })
    const before = Date.now()
    const timestamp = before + MINUTE_MS
    // A 4 s delay (it alone would fit in the 5 s): the delay said stays above
    // a minute however long a loaded machine takes between `before` and
    // each refusal (a 500 ms delay left only 500 ms for two adds' Redis calls).
    await addWithDeadline(queue, 'remind', {}, { deadline, delay: 4_000, timestamp }).catch(
      () => {},
    )
    // Due a minute and four seconds from now: 4000 ms said a job that fit.
    expect(refusals).toHaveLength(1)
    expect(refusals[0]).toMatchObject({ reason: 'delay', remainingMs: 5_000 })
    const { delayMs } = refusals[0]!
    expect(delayMs).toBeGreaterThan(MINUTE_MS)
    expect(delayMs).toBeLessThanOrEqual(MINUTE_MS + 4_000)

    // Dark mode: added, and `observed` says the same.
    const observed = Deadline.after(5_000, { clock: new ManualClock(), observe: true })
    await addWithDeadline(queue, 'dark', {}, { deadline: observed, delay: 4_000, timestamp })
    expect(refusals[1]).toMatchObject({ outcome: 'observed', reason: 'delay' })
    expect(refusals[1]!.delayMs).toBeGreaterThan(MINUTE_MS)

    // Counted from a timestamp long past, the delay is over: 0, not the 500 ms given.
    const ended = Deadline.after(5_000, { clock: new ManualClock() })
    ended.cancel(new Error('caller left'))
    await addWithDeadline(
      queue,
      'over',
      {},
      {
        deadline: ended,
        delay: 500,
        timestamp: before - MINUTE_MS,
      },
    ).catch(() => {})
    expect(refusals[2]).toMatchObject({ reason: 'ended', delayMs: 0 })
  })

  it('adds a long delay counted from a timestamp in the past that ends within the deadline; BullMQ has it due then', async () => {
    const { queue } = await redis.queue()
    const deadline = Deadline.after(5_000, { clock: new ManualClock() })
    // Created 10 s ago with a 10.5 s delay: due in about half a second.
    const job = await addWithDeadline(
      queue,
      'soon',
      {},
      { deadline, delay: 10_500, timestamp: Date.now() - 10_000 },
    )
    expect(job.opts).toMatchObject({ delay: 10_500, hourglass: { budgetMs: 5_000 } })
    expect(await dueInMs(redis, queue, job.id!)).toBeLessThan(5_000)
  })

  it("counts from the queue's defaultJobOptions.timestamp as BullMQ merges it, and from now without one", async () => {
    const timestamp = Date.now() + MINUTE_MS
    const { name } = await redis.queue()
    const queue = new Queue(name, {
      connection: redis.connection(),
      defaultJobOptions: { timestamp },
    })
    try {
      const deadline = Deadline.after(5_000, { clock: new ManualClock() })
      await expect(addWithDeadline(queue, 'remind', {}, { deadline, delay: 500 })).rejects.toThrow(
        /counted from its timestamp/,
      )
      // The job's own (falsy: BullMQ's Date.now()) wins over the queue's.
      const own = await addWithDeadline(queue, 'now', {}, { deadline, delay: 500, timestamp: 0 })
      expect(await dueInMs(redis, queue, own.id!)).toBeLessThan(5_000)
    } finally {
      await queue.close()
    }
  })
})
