import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { addWithDeadline, bullmqChannels, withDeadline } from '../src/index.js'
import { collect, finished } from './support/observe.js'
import { available, useRedisQueues } from './support/redisQueues.js'

// The `end` of a failed attempt BullMQ retries says after what back-off, as
// fetch's and llm's retry messages do: a tracer's retry event carries it
// (`hourglass.deadline.retry.delay_ms`), and nothing else knew it — the
// worker had asked BullMQ and kept the answer to itself.

describe.skipIf(!available)('hourglass:bullmq:end reports the back-off of a retry', () => {
  const redis = useRedisQueues()

  it('a retried attempt’s end carries retryDelayMs, BullMQ’s back-off; the attempt that completes has none', async () => {
    const { queue, events, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    let calls = 0
    redis.worker(
      name,
      withDeadline(async () => {
        if (++calls === 1) throw new Error('upstream 503')
        return 'ok'
      }),
    )
    const job = await addWithDeadline(
      queue,
      'flaky',
      {},
      { deadline: Deadline.after(20_000), attempts: 3, backoff: { type: 'fixed', delay: 50 } },
    )
    expect(await finished(job, events, queue)).toMatchObject({ state: 'completed' })
    expect(ends.map((e) => [e.attempt, e.outcome, e.retryDelayMs])).toEqual([
      [1, 'retry', 50],
      [2, 'completed', undefined],
    ])
  })

  it('a retry dropped for want of time says the back-off that would not fit; in dark mode the kept retry says it too', async () => {
    const { queue, events, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    redis.worker(
      name,
      withDeadline(async () => {
        throw new Error('upstream 503')
      }),
    )
    const options = { attempts: 3, backoff: { type: 'fixed', delay: 60_000 } }
    const dropped = await addWithDeadline(
      queue,
      'enforced',
      {},
      {
        deadline: Deadline.after(5_000, { clock: new ManualClock() }),
        ...options,
      },
    )
    expect(await finished(dropped, events, queue)).toMatchObject({ state: 'failed' })
    await addWithDeadline(
      queue,
      'observed',
      {},
      {
        deadline: Deadline.after(5_000, { observe: true, clock: new ManualClock() }),
        ...options,
      },
    )
    await expect.poll(() => ends.length).toBe(2)
    expect(ends.map((e) => [e.name, e.outcome, e.enforcedOutcome, e.retryDelayMs])).toEqual([
      ['enforced', 'no_time_to_retry', undefined, 60_000],
      ['observed', 'retry', 'no_time_to_retry', 60_000],
    ])
  })
})
