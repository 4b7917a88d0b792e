import { currentDeadline, Deadline } from '@hourglass/core'
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

// `worker.close(true)` waits for no running job and aborts no signal: the
// attempt ran on to its end, reported `completed`, while BullMQ wrote
// nothing of it (its connection closing) and the stall check gave the job
// to another worker, which ran it again — the same job twice, both
// reported completed.
describe.skipIf(!available)('a worker closed with force under a running attempt', () => {
  const redis = useRedisQueues()

  it('stops the attempt: its signal and deadline abort with JobLockLostError (why worker_closed)', async () => {
    const { queue, name } = await redis.queue()
    const running = signal<{ jobSignal: AbortSignal; deadline: Deadline }>()
    const ended = signal<BullmqEndMessage>()
    const ends = collect(bullmqChannels.end)
    bullmqChannels.end.subscribe(ended.resolve)
    const worker = redis.worker(
      name,
      withDeadline(async (_job, _token, jobSignal) => {
        running.resolve({ jobSignal: jobSignal!, deadline: currentDeadline()! })
        // Runs until stopped: the deadline (a minute) is not what ends it.
        await new Promise((_, reject) =>
          jobSignal!.addEventListener('abort', () => reject(jobSignal!.reason)),
        )
      }),
    )
    try {
      const job = await addWithDeadline(queue, 'j', {}, { deadline: Deadline.after(60_000) })
      const { jobSignal, deadline } = await running.promise
      await worker.close(true)
      // Told by the time close() resolves: BullMQ emits 'closed' before it does.
      expect(jobSignal.aborted).toBe(true)
      expect(isJobLockLost(jobSignal.reason)).toBe(true)
      expect(jobSignal.reason).toMatchObject({
        code: 'JOB_LOCK_LOST',
        why: 'worker_closed',
        jobId: job.id,
        queue: name,
      })
      expect(deadline.reason).toBe(jobSignal.reason)
      const end = await ended.promise
      expect(end.outcome).toBe('lock_lost')
      expect(end.error).toBe(jobSignal.reason)
      expect(ends).toHaveLength(1)
    } finally {
      bullmqChannels.end.unsubscribe(ended.resolve)
    }
  })

  it('an attempt that ignores its signal and returns is lock_lost, not completed: BullMQ recorded nothing', async () => {
    const { queue, name } = await redis.queue()
    const running = signal()
    const release = signal()
    const ended = signal<BullmqEndMessage>()
    bullmqChannels.end.subscribe(ended.resolve)
    const worker = redis.worker(
      name,
      withDeadline(async () => {
        running.resolve()
        await release.promise
        return 'done'
      }),
    )
    try {
      const job = await addWithDeadline(queue, 'j', {}, { deadline: Deadline.after(60_000) })
      await running.promise
      await worker.close(true)
      release.resolve()
      const end = await ended.promise
      expect(end.outcome).toBe('lock_lost')
      expect(end.error).toMatchObject({ code: 'JOB_LOCK_LOST', why: 'worker_closed' })
      // What BullMQ has of it: still active (its lock left to expire), not completed.
      expect(await (await queue.getJob(job.id!))?.getState()).toBe('active')
    } finally {
      bullmqChannels.end.unsubscribe(ended.resolve)
    }
  })

  it('a close that waits for its jobs (close()) stops nothing: the attempt completes', async () => {
    const { queue, name } = await redis.queue()
    const running = signal()
    const release = signal()
    const ended = signal<BullmqEndMessage>()
    bullmqChannels.end.subscribe(ended.resolve)
    const worker = redis.worker(
      name,
      withDeadline(async (_job, _token, jobSignal) => {
        running.resolve()
        await release.promise
        return jobSignal!.aborted ? 'aborted' : 'done'
      }),
    )
    try {
      const job = await addWithDeadline(queue, 'j', {}, { deadline: Deadline.after(60_000) })
      await running.promise
      const closing = worker.close()
      release.resolve()
      await closing
      const end = await ended.promise
      expect(end.outcome).toBe('completed')
      const stored = await queue.getJob(job.id!)
      expect(await stored?.getState()).toBe('completed')
      expect(stored?.returnvalue).toBe('done')
    } finally {
      bullmqChannels.end.unsubscribe(ended.resolve)
    }
  })
})
