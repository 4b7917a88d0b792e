import { Deadline } from '@hourglass/core'
import { DelayedError, type Job } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { addWithDeadline, bullmqChannels, withDeadline } from '../src/index.js'
import { collect, finished } from './support/observe.js'
import { available, useRedisQueues } from './support/redisQueues.js'

// `attempt` was `job.attemptsMade + 1`: BullMQ's count of failed attempts,
// which a stall (the job back from a worker that lost its lock) and a
// processor's own move to delayed (`DelayedError`) leave alone. A job run
// twice said `attempt: 1` twice: two spans of one number, and a trace that
// hid the second run. Every time a worker takes the job is an attempt
// (BullMQ's `attemptsStarted`).
describe.skipIf(!available)('attempt counts every time a worker takes the job', () => {
  const redis = useRedisQueues()

  it('a job that moved itself to delayed (DelayedError) runs again as attempt 2', async () => {
    const { queue, events, name } = await redis.queue()
    const starts = collect(bullmqChannels.start)
    const ends = collect(bullmqChannels.end)
    let calls = 0
    redis.worker(
      name,
      withDeadline(async (job: Job, token?: string) => {
        if (++calls > 1) return 'again'
        await job.moveToDelayed(Date.now() + 50, token)
        throw new DelayedError()
      }),
    )
    const job = await addWithDeadline(queue, 'poll', {}, { deadline: Deadline.after(20_000) })
    // BullMQ's attemptsMade (its completion counts one) never saw the first run.
    expect(await finished(job, events, queue)).toMatchObject({
      state: 'completed',
      attemptsMade: 1,
    })
    expect(starts.map((m) => m.attempt)).toEqual([1, 2])
    expect(ends.map((m) => [m.attempt, m.outcome])).toEqual([
      [1, 'deferred'],
      [2, 'completed'],
    ])
  })

  it('a job back from a stalled attempt (its lock lost) runs again as attempt 2', async () => {
    const { queue, events, name } = await redis.queue()
    const starts = collect(bullmqChannels.start)
    const ends = collect(bullmqChannels.end)
    let calls = 0
    const client = redis.client()
    redis.worker(
      name,
      withDeadline(async (job: Job, _token, signal) => {
        if (++calls > 1) return 'again'
        // The lock gone, as if it had expired while the worker stalled: the
        // next renewal fails, this attempt is stopped, and the stall check
        // puts the job back in wait.
        await client.del(`bull:${name}:${job.id}:lock`)
        await new Promise((_, reject) =>
          signal!.addEventListener('abort', () => reject(signal!.reason)),
        )
      }),
      { lockDuration: 400, stalledInterval: 300 },
    )
    const job = await addWithDeadline(queue, 'j', {}, { deadline: Deadline.after(60_000) })
    // BullMQ's attemptsMade (its completion counts one) never saw the first run.
    expect(await finished(job, events, queue)).toMatchObject({
      state: 'completed',
      attemptsMade: 1,
    })
    expect(starts.map((m) => m.attempt)).toEqual([1, 2])
    expect(ends.map((m) => [m.attempt, m.outcome])).toEqual([
      [1, 'lock_lost'],
      [2, 'completed'],
    ])
  })

  it('a retry after a failure is attempt 2, as before', async () => {
    const { queue, events, name } = await redis.queue()
    const starts = collect(bullmqChannels.start)
    let calls = 0
    redis.worker(
      name,
      withDeadline(async () => {
        if (++calls > 1) return 'again'
        throw new Error('upstream down')
      }),
    )
    const job = await addWithDeadline(
      queue,
      'r',
      {},
      { deadline: Deadline.after(20_000), attempts: 2 },
    )
    expect(await finished(job, events, queue)).toMatchObject({
      state: 'completed',
      attemptsMade: 2,
    })
    expect(starts.map((m) => m.attempt)).toEqual([1, 2])
  })
})
