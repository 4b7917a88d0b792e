import { Deadline, ManualClock } from '@hourglass/core'
import { type Job, UnrecoverableError } from 'bullmq'
import { describe, expect, it } from 'vitest'
import {
  addWithDeadline,
  fromJobError,
  isJobDeadlineExceeded,
  JobDeadlineExceededError,
  withDeadline,
} from '../src/index.js'
import { available, redisClockPasses, storedExpiry, useRedisQueues } from './support/redisQueues.js'

// The worker's JobDeadlineExceededError is named UnrecoverableError so that
// BullMQ does not retry the job whose deadline ended. fromJobError's copy,
// read back by whoever waited for that job, had the same name: a job that
// waits on another job and rethrows its failure was failed by BullMQ on its
// first attempt, whatever its `attempts` said. Only the job the deadline
// ended is spared its retries, not its callers.

describe.skipIf(!available)('fromJobError: the name does not stop an outer retry', () => {
  const redis = useRedisQueues()

  /** An inner job failed unrun by its deadline (it reached its worker too late), as its waiter sees it. */
  async function expiredInnerJob(): Promise<{ job: Job; waited: () => Promise<unknown> }> {
    const { queue, events, name } = await redis.queue()
    const job = await addWithDeadline(
      queue,
      'inner',
      {},
      { deadline: Deadline.after(100, { clock: new ManualClock() }) },
    )
    await redisClockPasses(redis.client(), storedExpiry(job))
    redis.worker(
      name,
      withDeadline(async () => 'done'),
    )
    const waited = () =>
      job.waitUntilFinished(events).then(
        () => undefined,
        (error: unknown) => error,
      )
    expect(await waited()).toBeInstanceOf(Error)
    return { job, waited }
  }

  it('is not named UnrecoverableError; the worker’s own error still is', () => {
    const worker = new JobDeadlineExceededError({
      stage: 'queued',
      jobId: '7',
      queue: 'reports',
      budgetMs: 100,
      elapsedMs: 130,
    })
    expect(worker.name).toBe('UnrecoverableError')
    const read = fromJobError(new Error(worker.message))
    expect(isJobDeadlineExceeded(read)).toBe(true)
    expect((read as Error).name).toBe('JobDeadlineExceededError')
    expect(read).not.toBeInstanceOf(UnrecoverableError)
  })

  it.each([
    ['a plain BullMQ worker', false],
    ['a withDeadline worker, the outer job with time left', true],
  ])(
    'an outer job that rethrows it is retried by BullMQ as its attempts say: %s',
    async (_, wrapped) => {
      const inner = await expiredInnerJob()
      const { queue, events, name } = await redis.queue()
      let runs = 0
      const processor = async () => {
        runs++
        const error = await inner.waited()
        throw fromJobError(error)
      }
      redis.worker(name, wrapped ? withDeadline(processor) : processor)
      const outer = await addWithDeadline(
        queue,
        'outer',
        {},
        {
          attempts: 3,
          // A deadline of its own, far from its end: its retries fit.
          deadline: wrapped ? Deadline.after(60_000) : Deadline.never(),
        },
      )
      const failed = await outer.waitUntilFinished(events).then(
        () => undefined,
        (error: unknown) => error,
      )
      expect((failed as Error).message).toMatch(
        /^deadline_exceeded: job \d+ of q\d+-\d+ reached a worker/,
      )
      expect(runs).toBe(3)
      expect((await queue.getJob(outer.id!))?.attemptsMade).toBe(3)
    },
  )
})
