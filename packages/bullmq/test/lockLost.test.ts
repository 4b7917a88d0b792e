import { Deadline } from '@hourglass/core'
import { DelayedError } from 'bullmq'
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

  // The stall check (here every 200 ms) puts the job back in wait before a
  // renewal (every 3 s) could fail, and the same worker, with a slot free,
  // takes it: BullMQ renews one lock per job id, the newer attempt's, so no
  // renewal ever failed for the older one. It ran on beside the newer one,
  // both reported completed.
  it('stops an attempt whose job its own worker took again (lock gone, put back by the stall check): why taken_again', async () => {
    const { queue, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    const started = [signal<AbortSignal>(), signal<AbortSignal>()]
    const release = signal()
    let n = 0
    redis.worker(
      name,
      withDeadline(async (_job, _token, jobSignal) => {
        started[n++]?.resolve(jobSignal!)
        await Promise.race([
          release.promise,
          new Promise((resolve) => jobSignal!.addEventListener('abort', resolve)),
        ])
        return 'done'
      }),
      { concurrency: 2, lockDuration: 6000, stalledInterval: 200 },
    )
    const job = await addWithDeadline(queue, 'j', {}, { deadline: Deadline.after(60_000) })
    const first = await started[0]!.promise
    await redis.client().del(`bull:${name}:${job.id}:lock`)
    const second = await started[1]!.promise
    expect(first.aborted).toBe(true)
    expect(first.reason).toMatchObject({ code: 'JOB_LOCK_LOST', jobId: job.id, why: 'taken_again' })
    expect(second.aborted).toBe(false)
    await expect.poll(() => ends.length).toBe(1)
    expect(ends[0]).toMatchObject({ attempt: 1, outcome: 'lock_lost' })
    release.resolve()
    await expect.poll(() => ends.length).toBe(2)
    expect(ends[1]).toMatchObject({ attempt: 2, outcome: 'completed' })
  })

  it('leaves running an attempt that moved its own job and is taken again before it throws DelayedError', async () => {
    const { queue, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    const started = [signal<AbortSignal>(), signal<AbortSignal>()]
    let n = 0
    redis.worker(
      name,
      withDeadline(async (job, token, jobSignal) => {
        const attempt = n++
        started[attempt]?.resolve(jobSignal!)
        if (attempt > 0) return 'done'
        // Due at once: the worker's free slot takes it while this attempt still runs.
        await job.moveToDelayed(Date.now(), token)
        await started[1]!.promise
        throw new DelayedError()
      }),
      { concurrency: 2 },
    )
    await addWithDeadline(queue, 'j', {}, { deadline: Deadline.after(60_000) })
    const first = await started[0]!.promise
    await started[1]!.promise
    expect(first.aborted).toBe(false)
    await expect.poll(() => ends.length).toBe(2)
    expect(ends.map((e) => e.outcome).sort()).toEqual(['completed', 'deferred'])
  })

  // A move that left the job in active (a moveToWaitingChildren with no
  // child pending resolves false) or that BullMQ refused (here: not its
  // token) let nothing go: the job is still this attempt's, and a worker
  // that takes it again later found its lock gone, as above.
  it('still stops an attempt taken again after moves that left its job in active (moved nothing, rejected)', async () => {
    const { queue, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    const started = [signal<AbortSignal>(), signal<AbortSignal>()]
    const release = signal()
    const moved: unknown[] = []
    let n = 0
    redis.worker(
      name,
      withDeadline(async (job, token, jobSignal) => {
        const attempt = n++
        if (attempt === 0) {
          moved.push(await job.moveToWaitingChildren(token!))
          moved.push(await job.moveToDelayed(Date.now(), 'not-its-token').catch(() => 'rejected'))
        }
        started[attempt]?.resolve(jobSignal!)
        await Promise.race([
          release.promise,
          new Promise((resolve) => jobSignal!.addEventListener('abort', resolve)),
        ])
        return 'done'
      }),
      { concurrency: 2, lockDuration: 6000, stalledInterval: 200 },
    )
    const job = await addWithDeadline(queue, 'j', {}, { deadline: Deadline.after(60_000) })
    const first = await started[0]!.promise
    expect(moved).toEqual([false, 'rejected'])
    expect(await job.getState()).toBe('active')
    await redis.client().del(`bull:${name}:${job.id}:lock`)
    const second = await started[1]!.promise
    expect(first.reason).toMatchObject({ code: 'JOB_LOCK_LOST', why: 'taken_again' })
    expect(second.aborted).toBe(false)
    release.resolve()
    await expect.poll(() => ends.length).toBe(2)
    expect(ends.map((e) => e.outcome)).toEqual(['lock_lost', 'completed'])
  })

  // A dispatching processor: one wrapped processor hands the job to another
  // (same Job, same token). The inner call is no second fetch of the job.
  it('leaves running a wrapped processor that calls another wrapped processor for the same job', async () => {
    const { queue, name, events } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    const inner = withDeadline(async (_job, _token, jobSignal) => {
      jobSignal!.throwIfAborted()
      return 'inner done'
    })
    redis.worker(
      name,
      withDeadline(async (job, token, jobSignal) => inner(job, token, jobSignal)),
    )
    const job = await addWithDeadline(queue, 'j', {}, { deadline: Deadline.after(60_000) })
    expect(await job.waitUntilFinished(events)).toBe('inner done')
    // Each wrapping reports its attempt, as before.
    expect(ends.map((e) => [e.attempt, e.outcome])).toEqual([
      [1, 'completed'],
      [1, 'completed'],
    ])
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
