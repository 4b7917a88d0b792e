import { Deadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import {
  addWithDeadline,
  type BullmqEndMessage,
  bullmqChannels,
  isJobLockLost,
  withDeadline,
} from '../src/index.js'
import { collect, signal } from './support/observe.js'
import { available, useRedisQueues } from './support/redisQueues.js'

// BullMQ 6 aborts a processor's signal only for cancelJob: on a lost lock it
// emits `lockRenewalFailed` and the attempt ran on, while the stall check
// gave the job to another worker. The lock is deleted by hand here (as if it
// had expired while the worker stalled); the worker's next renewal fails.
describe.skipIf(!available)('a lost lock', () => {
  const redis = useRedisQueues()

  it('stops the attempt: its signal aborts with JobLockLostError, outcome lock_lost', async () => {
    const { queue, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    const running = signal()
    const aborted = signal<unknown>()
    const ended = signal<BullmqEndMessage>()
    bullmqChannels.end.subscribe(ended.resolve)
    const worker = redis.worker(
      name,
      withDeadline(async (_job, _token, jobSignal) => {
        jobSignal!.addEventListener('abort', () => aborted.resolve(jobSignal!.reason))
        running.resolve()
        // Runs until stopped: the deadline (a minute) is not what ends it.
        await new Promise((_, reject) =>
          jobSignal!.addEventListener('abort', () => reject(jobSignal!.reason)),
        )
      }),
      { lockDuration: 400 },
    )
    const lost = signal<string[]>()
    worker.on('lockRenewalFailed', lost.resolve)
    try {
      const job = await addWithDeadline(queue, 'j', {}, { deadline: Deadline.after(60_000) })
      await running.promise
      await redis.client().del(`bull:${name}:${job.id}:lock`)
      expect(await lost.promise).toContain(job.id)
      const reason = await aborted.promise
      expect(isJobLockLost(reason)).toBe(true)
      expect(reason).toMatchObject({ code: 'JOB_LOCK_LOST', jobId: job.id, queue: name })
      const end = await ended.promise
      expect(end.outcome).toBe('lock_lost')
      expect(isJobLockLost(end.error)).toBe(true)
      expect(ends).toHaveLength(1)
    } finally {
      bullmqChannels.end.unsubscribe(ended.resolve)
    }
  })

  it('keeps one lockRenewalFailed listener per worker, removed when it closes', async () => {
    const { queue, name } = await redis.queue()
    const started = [signal(), signal(), signal()]
    const release = signal()
    let n = 0
    const worker = redis.worker(
      name,
      withDeadline(async (_job, _token, _signal) => {
        started[n++]!.resolve()
        await release.promise
      }),
      { concurrency: 3 },
    )
    const before = worker.listenerCount('lockRenewalFailed')
    for (let i = 0; i < 3; i++) {
      await addWithDeadline(queue, 'j', {}, { deadline: Deadline.after(60_000) })
    }
    await Promise.all(started.map((s) => s.promise))
    expect(worker.listenerCount('lockRenewalFailed')).toBe(before + 1)
    release.resolve()
    await worker.close()
    expect(worker.listenerCount('lockRenewalFailed')).toBe(before)
  })
})
