import { Deadline, MAX_TIMER_MS, ManualClock } from '@hourglass/core'
import { DelayedError, type Job } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { addWithDeadline, bullmqChannels, withDeadline } from '../src/index.js'
import { collect, finished } from './support/observe.js'
import { available, useRedisQueues } from './support/redisQueues.js'

// A delayed job reaches an idle worker after its delay ends, not at it: the
// worker waits in BZPOPMIN, whose timeout Redis checks on its `hz` timer
// (10 a second by default), so up to 100 ms late. A retry let through with
// less than that to spare was failed unrun when it arrived — counted
// `expired` at stage `queued`, 200 ms later, as the queue's fault — or ran,
// by the luck of where in Redis's tick its back-off ended. `delayLagMs`
// (default 100) is charged to every delay, so such a retry is dropped when
// its attempt fails. No assertion here depends on the box's speed: what is
// left at the failure only ever shrinks, which drops a retry, never keeps one.

describe.skipIf(!available)('withDeadline allows for BullMQ’s delayed-job lag (delayLagMs)', () => {
  const redis = useRedisQueues()

  it('a retry whose back-off leaves minBudgetMs, but not the 100 ms lag, is dropped when its attempt fails: no_time_to_retry, not an expired job later', async () => {
    const { queue, events, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    const expired = collect(bullmqChannels.expire)
    const processor = withDeadline(async () => {
      throw new Error('upstream 503')
    })
    await redis.worker(name, processor).waitUntilReady()
    // 5 000 ms given, a 4 900 ms back-off: at most 100 ms left when it ends,
    // less than minBudgetMs (5) once the lag is counted.
    const job = await addWithDeadline(
      queue,
      'flaky',
      {},
      {
        deadline: Deadline.after(5_000, { clock: new ManualClock() }),
        attempts: 2,
        backoff: { type: 'fixed', delay: 4_900 },
      },
    )
    const result = await finished(job, events, queue)
    expect(result).toMatchObject({ state: 'failed', attemptsMade: 1 })
    expect(result.failedReason).toMatch(/and its next attempt, after 4900 ms, would not fit/)
    expect(ends.map((e) => e.outcome)).toEqual(['no_time_to_retry'])
    expect(expired).toEqual([])
    expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 1 })
  })

  it('the lag is the worker’s delayLagMs; a back-off of 0, straight back to wait, is not charged it', async () => {
    const { queue, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    const processor = withDeadline(
      async (job: Job) => {
        if (job.attemptsMade === 0) throw new Error('upstream 503')
        return 'ok'
      },
      { delayLagMs: 15_000 },
    )
    redis.worker(name, processor)
    const deadline = () => Deadline.after(20_000, { clock: new ManualClock() })
    // 10 s of back-off and 15 s of lag do not fit in 20 s…
    await addWithDeadline(
      queue,
      'delayed',
      {},
      {
        deadline: deadline(),
        attempts: 2,
        backoff: { type: 'fixed', delay: 10_000 },
      },
    )
    // …no back-off at all does, whatever the lag.
    await addWithDeadline(queue, 'at-once', {}, { deadline: deadline(), attempts: 2 })
    await expect.poll(() => ends.length).toBe(3)
    expect(ends.map((e) => [e.name, e.attempt, e.outcome])).toEqual([
      ['delayed', 1, 'no_time_to_retry'],
      ['at-once', 1, 'retry'],
      ['at-once', 2, 'completed'],
    ])
  })

  it('a job.moveToDelayed that leaves minBudgetMs at its time, but not after the lag, is refused, and says so', async () => {
    const { queue, events, name } = await redis.queue()
    const processor = withDeadline(
      async (job: Job, token?: string) => {
        await job.moveToDelayed(Date.now() + 15_000, token)
        throw new DelayedError()
      },
      { delayLagMs: 10_000 },
    )
    redis.worker(name, processor)
    const job = await addWithDeadline(queue, 'poll', {}, { deadline: Deadline.after(20_000) })
    const result = await finished(job, events, queue)
    expect(result.state).toBe('failed')
    expect(result.failedReason).toMatch(
      /not retried: moveToDelayed\(\d+\) would resume the job with \d+ ms left, and a worker may take it up to delayLagMs \(10000\) later: less than minBudgetMs \(5\) by then; it was not moved$/,
    )
    expect(processor.counts.retriesDropped).toBe(1)
  })

  it('refuses a delayLagMs that is not a finite number ≥ 0, naming it', () => {
    const job = async () => 1
    expect(() => withDeadline(job, { delayLagMs: -1 })).toThrow(
      new RangeError('withDeadline: delayLagMs must be a finite number ≥ 0, got -1'),
    )
    expect(() => withDeadline(job, { delayLagMs: Number.POSITIVE_INFINITY })).toThrow(RangeError)
    expect(() => withDeadline(job, { delayLagMs: '100' as never })).toThrow(TypeError)
    expect(() => withDeadline(job, { delayLagMs: 0 })).not.toThrow()
  })
})

describe('delayLagMs bounded by the longest budget a job records', () => {
  // `delayLagMs: Date.now()` (a timestamp where a duration belongs) was
  // accepted: every retry after a back-off was dropped, silently, at run time.
  it.each([1e12, MAX_TIMER_MS])('refuses %d at creation, naming it and the bound', (delayLagMs) => {
    expect(() => withDeadline(async () => 1, { delayLagMs })).toThrow(
      new RangeError(
        `withDeadline: delayLagMs (${delayLagMs}) must be less than ${MAX_TIMER_MS} ms (2³¹−1, the most a job's recorded budget is): every retry after a back-off would be dropped`,
      ),
    )
  })

  it('accepts a large lag under it', () => {
    expect(() => withDeadline(async () => 1, { delayLagMs: 60_000 })).not.toThrow()
    expect(() => withDeadline(async () => 1, { delayLagMs: MAX_TIMER_MS - 1 })).not.toThrow()
  })
})
