import { once } from 'node:events'
import { ManualClock } from '@hourglass/core'
import type { Job, JobsOptions } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { bullmqChannels, JobDeadlineExceededError, withDeadline } from '../src/index.js'
import { collect, finished, signal } from './support/observe.js'
import { available, redisNowMs, useRedisQueues } from './support/redisQueues.js'

// A job whose `hourglass` option another producer wrote may record no
// `budgetMs`. Its failure reason said "added with 0 ms left" and its
// messages `budgetMs: 0`: a budget nobody gave it. Both now say what is
// known — no budget was recorded. No assertion here is on milliseconds.

describe.skipIf(!available)('a job that recorded no budget', () => {
  const redis = useRedisQueues()

  it('reached a worker after its expiry: the reason says no budget was recorded, the message has no budgetMs', async () => {
    const { queue, events, name } = await redis.queue()
    const expired = collect(bullmqChannels.expire)
    const now = await redisNowMs(redis.client())
    const job = await queue.add('foreign', {}, {
      hourglass: { expiresAtMs: now - 500 },
    } as JobsOptions)
    redis.worker(
      name,
      withDeadline(async () => 'ran'),
    )
    const result = await finished(job, events, queue)
    expect(result.state).toBe('failed')
    expect(result.failedReason).toMatch(
      /^deadline_exceeded: job \d+ of q\d+-\d+ reached a worker \d+ ms after its deadline \(no budget recorded\); not run$/,
    )
    expect(result.failedReason).not.toContain('added with')
    expect(expired).toHaveLength(1)
    expect(expired[0]).toMatchObject({ jobId: job.id, outcome: 'expired', budgetMs: undefined })
  })

  it('stopped while it ran: the reason says no budget was recorded; start and end have no budgetMs', async () => {
    const { queue, events, name } = await redis.queue()
    const starts = collect(bullmqChannels.start)
    const ends = collect(bullmqChannels.end)
    const clock = new ManualClock()
    const started = signal<AbortSignal>()
    redis.worker(
      name,
      withDeadline(
        async (_job: Job, _token, jobSignal) => {
          started.resolve(jobSignal!)
          await once(jobSignal!, 'abort')
          throw jobSignal!.reason
        },
        { clock },
      ),
    )
    const now = await redisNowMs(redis.client())
    const job = await queue.add('foreign', {}, {
      hourglass: { expiresAtMs: now + 60_000 },
    } as JobsOptions)
    await started.promise
    // The manual clock ends the job's deadline: well past anything it had.
    clock.advance(120_000)
    const result = await finished(job, events, queue)
    expect(result.failedReason).toMatch(
      /^deadline_exceeded: job \d+ .* was stopped by its deadline \(no budget recorded\): /,
    )
    expect(starts).toEqual([expect.objectContaining({ jobId: job.id, budgetMs: undefined })])
    expect(ends).toEqual([
      expect.objectContaining({ jobId: job.id, budgetMs: undefined, outcome: 'deadline_exceeded' }),
    ])
  })
})

describe('JobDeadlineExceededError for a job that recorded no budget', () => {
  it('says so, for every stage, and measures against what the job had when the worker took it', () => {
    const error = (stage: 'queued' | 'running' | 'retry', budgetMs: number, elapsedMs: number) =>
      new JobDeadlineExceededError({
        stage,
        jobId: '7',
        queue: 'mail',
        budgetMs,
        elapsedMs,
        budgetRecorded: false,
        retryDelayMs: 1000,
      })
    const late = error('queued', 0, 500)
    expect(late.message).toBe(
      'deadline_exceeded: job 7 of mail reached a worker 500 ms after its deadline (no budget recorded); not run',
    )
    expect(late.budgetRecorded).toBe(false)
    expect(error('queued', 3, 0).message).toBe(
      'deadline_exceeded: job 7 of mail reached a worker with 3 ms left, too little to start (no budget recorded); not run',
    )
    expect(error('running', 2000, 2000).message).toBe(
      'deadline_exceeded: job 7 of mail was stopped by its deadline (no budget recorded)',
    )
    expect(error('retry', 2000, 1900).message).toBe(
      'deadline_exceeded: job 7 of mail failed with 100 ms left (no budget recorded) and its next attempt, after 1000 ms, would not fit; not retried',
    )
    // A job that recorded its budget, as before.
    const recorded = new JobDeadlineExceededError({
      stage: 'running',
      jobId: '7',
      queue: 'mail',
      budgetMs: 2000,
      elapsedMs: 2000,
    })
    expect(recorded.budgetRecorded).toBe(true)
    expect(recorded.message).toBe(
      'deadline_exceeded: job 7 of mail was stopped by its deadline (added with 2000 ms left)',
    )
  })
})
