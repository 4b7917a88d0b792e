import { once } from 'node:events'
import { Deadline } from '@hourglass/core'
import type { Job } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { addWithDeadline, bullmqChannels, withDeadline } from '../src/index.js'
import { collect, finished } from './support/observe.js'
import { available, useRedisQueues } from './support/redisQueues.js'

// The retry check asks BullMQ for the back-off of a failed attempt, and
// BullMQ asked again a moment later, when it moved the job: a worker's
// `backoffStrategy` ran twice per failure (its side effects — a metric, a
// Retry-After read off a store — twice), and a back-off that is not the same
// on every call (a jitter, a strategy of one's own) was judged by one draw
// and applied by another. A retry judged to fit was then parked for the
// second draw: past the deadline, to fail unrun a back-off later as "reached
// a worker after its deadline", with `end` reporting a back-off BullMQ never
// used. BullMQ now applies the answer the check judged.

describe.skipIf(!available)('a failed attempt’s back-off is asked for once', () => {
  const redis = useRedisQueues()

  it('a custom backoffStrategy runs once per failure, and BullMQ applies the back-off that was judged and reported', async () => {
    const { queue, events, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    let asked = 0
    let runs = 0
    const worker = redis.worker(
      name,
      withDeadline(async () => {
        if (++runs === 1) throw new Error('upstream 503')
        return 'ok'
      }),
      // A strategy whose second answer differs (a draw, a store read once).
      { settings: { backoffStrategy: () => (++asked === 1 ? 50 : 60_000) } },
    )
    const failed = once(worker, 'failed') as Promise<[Job]>
    const job = await addWithDeadline(
      queue,
      'flaky',
      {},
      { deadline: Deadline.after(20_000), attempts: 2, backoff: { type: 'mine' } },
    )
    const [retried] = await failed
    expect(asked).toBe(1)
    // What BullMQ parked the job for: the back-off judged to fit.
    expect(retried.delay).toBe(50)
    expect(await finished(job, events, queue)).toMatchObject({ state: 'completed' })
    expect(ends.map((e) => [e.attempt, e.outcome, e.retryDelayMs])).toEqual([
      [1, 'retry', 50],
      [2, 'completed', undefined],
    ])
  })

  it('a jittered back-off is drawn once: the end reports the delay BullMQ applies', async () => {
    const { queue, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    const worker = redis.worker(
      name,
      withDeadline(async () => {
        throw new Error('upstream 503')
      }),
    )
    const failed = once(worker, 'failed') as Promise<[Job]>
    await addWithDeadline(
      queue,
      'jittered',
      {},
      {
        deadline: Deadline.after(20_000),
        attempts: 2,
        backoff: { type: 'fixed', delay: 10_000, jitter: 1 },
      },
    )
    const [retried] = await failed
    expect(ends).toHaveLength(1)
    expect(ends[0]).toMatchObject({ outcome: 'retry', retryDelayMs: retried.delay })
  })

  it('a strategy that throws is asked once; BullMQ meets its error as before', async () => {
    const { queue, name } = await redis.queue()
    let asked = 0
    const worker = redis.worker(
      name,
      withDeadline(async () => {
        throw new Error('upstream 503')
      }),
      {
        settings: {
          backoffStrategy: () => {
            asked++
            throw new Error('strategy broke')
          },
        },
      },
    )
    const errors: Error[] = []
    worker.on('error', (error) => errors.push(error))
    await addWithDeadline(
      queue,
      'broken',
      {},
      { deadline: Deadline.after(20_000), attempts: 2, backoff: { type: 'mine' } },
    )
    await expect.poll(() => errors.length).toBeGreaterThan(0)
    expect(errors[0]?.message).toBe('strategy broke')
    expect(asked).toBe(1)
  })
})
