import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { addWithDeadline, bullmqChannels, withDeadline } from '../src/index.js'
import { collect, finished } from './support/observe.js'
import { available, redisClockPasses, storedExpiry, useRedisQueues } from './support/redisQueues.js'

// Dark mode (an observe-only deadline) runs a job that reached its worker too
// late, and `enforcedOutcome` on its `end` message is what enforcement would
// have made of that attempt. Enforcement never runs such a job: it is
// `expired` (the `expire` message's outcome), whatever the run then did —
// not `deadline_exceeded` ("stopped while it ran") or `no_time_to_retry`
// ("its retry was dropped"), nor nothing at all because the run happened to
// succeed. Each producer's deadline is on a ManualClock, so the budget stored
// is exactly the one given; the Redis clock is waited on, never slept for.

describe.skipIf(!available)('dark mode: an attempt that starts too late', () => {
  const redis = useRedisQueues()

  /** A job with an observe-only deadline of 1 ms, that has passed on the Redis clock. */
  const expiredDarkJob = async (opts: { attempts?: number; backoff?: number } = {}) => {
    const { queue, events, name } = await redis.queue()
    const deadline = Deadline.after(1, { observe: true, clock: new ManualClock() })
    const job = await addWithDeadline(
      queue,
      'dark-late',
      {},
      {
        deadline,
        ...(opts.attempts ? { attempts: opts.attempts } : {}),
        ...(opts.backoff ? { backoff: { type: 'fixed', delay: opts.backoff } } : {}),
      },
    )
    await redisClockPasses(redis.client(), storedExpiry(job))
    return { queue, events, name, job }
  }

  it('past its deadline, then failed: reported as expired (enforcement would not have run it), not deadline_exceeded', async () => {
    const expires = collect(bullmqChannels.expire)
    const ends = collect(bullmqChannels.end)
    const { queue, events, name, job } = await expiredDarkJob()
    const processor = withDeadline(async () => {
      throw new Error('upstream 503')
    })
    redis.worker(name, processor)

    // It ran, and failed as it would have without Hourglass.
    expect(await finished(job, events, queue)).toMatchObject({
      state: 'failed',
      failedReason: 'upstream 503',
      attemptsMade: 1,
    })
    expect(expires).toEqual([
      expect.objectContaining({ jobId: job.id, observe: true, outcome: 'expired' }),
    ])
    expect(ends).toEqual([
      expect.objectContaining({ jobId: job.id, outcome: 'failed', enforcedOutcome: 'expired' }),
    ])
    expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 0 })
  })

  it('past its deadline, then failed with attempts left: retried, and reported as expired, not deadline_exceeded', async () => {
    const ends = collect(bullmqChannels.end)
    // The back-off keeps the retry waiting until the test ends.
    const { queue, name, job } = await expiredDarkJob({ attempts: 3, backoff: 60_000 })
    redis.worker(
      name,
      withDeadline(async () => {
        throw new Error('upstream 503')
      }),
    )

    await expect.poll(async () => (await queue.getJob(job.id!))?.getState()).toBe('delayed')
    expect(ends).toEqual([
      expect.objectContaining({ jobId: job.id, outcome: 'retry', enforcedOutcome: 'expired' }),
    ])
  })

  it('past its deadline, then completed: completed_late, and reported as expired (enforcement would have lost the result)', async () => {
    const ends = collect(bullmqChannels.end)
    const { queue, events, name, job } = await expiredDarkJob()
    redis.worker(
      name,
      withDeadline(async () => 'ran'),
    )

    expect(await finished(job, events, queue)).toMatchObject({ ok: true, value: 'ran' })
    expect(ends).toEqual([
      expect.objectContaining({
        jobId: job.id,
        outcome: 'completed_late',
        enforcedOutcome: 'expired',
      }),
    ])
  })

  it('with time left but less than minBudgetMs: completed in time, and reported as expired; a failure with a retry left is expired too, not no_time_to_retry', async () => {
    const { queue, events, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    let calls = 0
    redis.worker(
      name,
      withDeadline(
        async () => {
          if (++calls === 1) throw new Error('upstream 503')
          return 'ok'
        },
        { minBudgetMs: 120_000 },
      ),
    )
    const job = await addWithDeadline(
      queue,
      'dark-short',
      {},
      {
        deadline: Deadline.after(60_000, { observe: true, clock: new ManualClock() }),
        attempts: 2,
      },
    )

    expect(await finished(job, events, queue)).toMatchObject({ ok: true, value: 'ok' })
    expect(ends.map((e) => [e.attempt, e.outcome, e.enforcedOutcome])).toEqual([
      [1, 'retry', 'expired'],
      [2, 'completed', 'expired'],
    ])
  })

  it('started in time: a failure before the deadline says nothing of enforcement (it would have done the same)', async () => {
    const { queue, events, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    redis.worker(
      name,
      withDeadline(async () => {
        throw new Error('upstream 503')
      }),
    )
    const job = await addWithDeadline(
      queue,
      'dark-in-time',
      {},
      { deadline: Deadline.after(60_000, { observe: true, clock: new ManualClock() }) },
    )

    expect(await finished(job, events, queue)).toMatchObject({ state: 'failed' })
    expect(ends).toEqual([expect.objectContaining({ jobId: job.id, outcome: 'failed' })])
    expect(ends[0]).not.toHaveProperty('enforcedOutcome')
  })
})
