import { Deadline, ManualClock } from '@hourglass/core'
import { type JobsOptions, Queue } from 'bullmq'
import { describe, expect, it, onTestFinished } from 'vitest'
import { addWithDeadline, withDeadline } from '../src/index.js'
import { available, redisClockPasses, storedExpiry, useRedisQueues } from './support/redisQueues.js'
import { settled } from './support/settled.js'

// The README's way to run a job its deadline failed: add it again. Its
// options copied to keep its attempts and back-off (`{ ...job.opts }`) hold
// the old job's `hourglass` too — an absolute expiry already past — and
// addWithDeadline passed it through whenever it stored no deadline itself
// (`Deadline.never()`, or none in context): the "plain job" was failed unrun
// again, as reaching a worker after a deadline it was never given.
describe.skipIf(!available)('addWithDeadline: a job re-added with a failed job’s options', () => {
  const redis = useRedisQueues()

  it('gets no deadline from the copied options when it is added with none: it runs', async () => {
    const { queue, name } = await redis.queue()
    const client = redis.client()
    const first = await addWithDeadline(
      queue,
      'report',
      { n: 1 },
      {
        // A manual clock: the add is never refused on a loaded box; the
        // stored expiry passes on Redis's clock, which the test waits for.
        deadline: Deadline.after(50, { clock: new ManualClock() }),
        attempts: 2,
      },
    )
    await redisClockPasses(client, storedExpiry(first))
    const processor = withDeadline(async (job) => job.data)
    const worker = redis.worker(name, processor)
    await settled(worker, 1)
    const failed = (await queue.getJob(first.id!))!
    expect(failed.failedReason).toMatch(/^deadline_exceeded: .* not run$/)

    const copied = { ...failed.opts } as JobsOptions
    const ended = settled(worker, 2)
    const never = await addWithDeadline(
      queue,
      'report',
      { n: 2 },
      {
        ...copied,
        deadline: Deadline.never(),
      },
    )
    const none = await addWithDeadline(queue, 'report', { n: 3 }, copied)
    await ended

    for (const job of [never, none]) {
      const back = (await queue.getJob(job.id!))!
      expect([await back.getState(), back.failedReason]).toEqual(['completed', undefined])
      expect(back.opts).not.toHaveProperty('hourglass')
      expect(back.opts.attempts).toBe(2)
      expect(back.returnvalue).toEqual(job.data)
    }
    expect(processor.counts.expired).toBe(1)
  })

  // The same options set as a queue's `defaultJobOptions` (a queue made
  // with a failed job's options): BullMQ merges them into every job whose
  // own options do not say otherwise, and a job added with no deadline took
  // their expiry — failed unrun, `deadline_exceeded`, never having had one.
  it('gets no deadline from its queue’s defaultJobOptions when it is added with none: it runs', async () => {
    const { name } = await redis.queue()
    const stale = { expiresAtMs: 1, budgetMs: 10 }
    const queue = new Queue(name, {
      connection: redis.connection(),
      defaultJobOptions: { attempts: 2, hourglass: stale } as JobsOptions,
    })
    onTestFinished(() => queue.close())
    const processor = withDeadline(async (job) => job.data)
    const worker = redis.worker(name, processor)
    const ended = settled(worker, 2)
    const never = await addWithDeadline(queue, 'report', { n: 1 }, { deadline: Deadline.never() })
    const none = await addWithDeadline(queue, 'report', { n: 2 })
    await ended
    for (const job of [never, none]) {
      const back = (await queue.getJob(job.id!))!
      expect([await back.getState(), back.failedReason]).toEqual(['completed', undefined])
      expect(back.opts).not.toHaveProperty('hourglass')
      expect(back.opts.attempts).toBe(2)
    }
    expect(processor.counts.expired).toBe(0)
  })

  it('under a deadline of its own, stores that one, not the copied one', async () => {
    const { queue } = await redis.queue()
    const stale = { expiresAtMs: 1, budgetMs: 10, addId: 'old' }
    const job = await addWithDeadline(
      queue,
      'report',
      {},
      {
        ...({ hourglass: stale } as JobsOptions),
        deadline: Deadline.after(60_000),
      },
    )
    const back = (await queue.getJob(job.id!))!
    expect(back.opts).toMatchObject({ hourglass: { budgetMs: expect.any(Number) } })
    expect((back.opts as { hourglass: { addId?: string } }).hourglass.addId).not.toBe('old')
    expect(storedExpiry(back)).toBeGreaterThan(1)
  })
})
