import { Deadline } from '@hourglass/core'
import type { Worker } from 'bullmq'
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

/** The script client BullMQ's worker runs its commands on (job.backend.client is the same). */
interface ScriptClient {
  runCommand(name: string, args: unknown[]): Promise<unknown>
}

/**
 * Holds the worker's Redis clock reading (the worker's client sends it only
 * once the test lets it): `asked` resolves when the attempt has asked.
 */
async function holdClockReading(
  worker: Worker,
): Promise<{ asked: Promise<void>; release: () => void }> {
  const client = await (worker as unknown as { backend: { client: Promise<ScriptClient> } }).backend
    .client
  const asked = signal()
  const letGo = signal()
  const send = client.runCommand
  // BullMQ's ioredis proxy takes a stub of runCommand (its override table).
  client.runCommand = (command, args) => {
    if (command !== 'hourglassTime') return send(command, args)
    asked.resolve()
    return letGo.promise.then(() => send(command, args))
  }
  return { asked: asked.promise, release: () => letGo.resolve() }
}

/** Resolves with the first error the worker emits whose message matches. */
function workerError(worker: Worker, pattern: RegExp): Promise<Error> {
  const seen = signal<Error>()
  worker.on('error', (error) => {
    if (pattern.test(error.message)) seen.resolve(error)
  })
  return seen.promise
}

/**
 * Adds a job with a minute left and loses its lock while `worker` reads the
 * Redis clock for it: the reading is held, the lock key deleted (as if it
 * had expired while the worker stalled), and let go once the worker has
 * reported the lock lost. `refused`: BullMQ's "Missing lock" for the job.
 */
async function loseLockWhileReadingClock(
  worker: Worker,
  queue: Parameters<typeof addWithDeadline>[0],
  dropLock: (jobId: string) => Promise<unknown>,
): Promise<{ job: { id?: string | undefined }; refused: Promise<Error> }> {
  const held = await holdClockReading(worker)
  const lost = signal<unknown[]>()
  worker.on('lockRenewalFailed', lost.resolve)
  try {
    const job = await addWithDeadline(queue, 'j', {}, { deadline: Deadline.after(60_000) })
    const refused = workerError(worker, new RegExp(`Missing lock for job ${job.id}\\.`))
    await held.asked
    await dropLock(job.id!)
    expect(await lost.promise).toContain(job.id)
    return { job, refused }
  } finally {
    held.release()
  }
}

// withDeadline reads the Redis clock before an attempt starts. It listened
// for the worker's `lockRenewalFailed` only after that reading came back, so
// a lock lost during the round trip (a renewal sent before the reading, or a
// slow reply) was never heard: the attempt ran with a live signal and
// deadline, its calls not aborted, while the stall check handed the job to
// another worker. Then, heard, it still called the processor (its signal
// aborted): whatever the processor did that ignores the signal (a database
// write, an email) was done twice. The reading is held here until the worker
// has reported the lock lost.
describe.skipIf(!available)('a lock lost while the worker reads the Redis clock', () => {
  const redis = useRedisQueues()

  it('the processor is never called: the attempt ends lock_lost with a JobLockLostError, and BullMQ, refused ("Missing lock"), throws nothing unhandled', async () => {
    const { queue, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    const expires = collect(bullmqChannels.expire)
    const starts = collect(bullmqChannels.start)
    const ended = signal<BullmqEndMessage>()
    const onEnd = (message: BullmqEndMessage) => {
      if (message.queue === name) ended.resolve(message)
    }
    bullmqChannels.end.subscribe(onEnd)
    let calls = 0
    const processor = withDeadline(async (_job, _token, _jobSignal) => {
      // A side effect that ignores the signal: it must not happen here.
      calls++
      return 'written'
    })
    // Renewals every 100 ms: the removed lock is reported soon.
    const worker = redis.worker(name, processor, { lockDuration: 400 })
    try {
      const { job, refused } = await loseLockWhileReadingClock(worker, queue, (id) =>
        redis.client().del(`bull:${name}:${id}:lock`),
      )

      const end = await ended.promise
      expect(end.outcome).toBe('lock_lost')
      expect(isJobLockLost(end.error)).toBe(true)
      expect(end.error).toMatchObject({ why: 'renewal_failed', jobId: job.id, queue: name })
      expect(end.deadline.done).toBe(true)
      expect(end.deadline.reason).toBe(end.error)
      // BullMQ is handed the JobLockLostError and cannot fail the job (its
      // lock is gone): it reports that on the worker's 'error', as for a
      // lock lost while running.
      await refused
      expect(calls).toBe(0)
      expect(starts.filter((m) => m.queue === name)).toHaveLength(1)
      expect(ends.filter((m) => m.queue === name)).toHaveLength(1)
      expect(expires.filter((m) => m.queue === name)).toHaveLength(0)
      expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 0 })
      // Not completed by this worker, nor failed: still BullMQ's to hand on.
      expect(await (await queue.getJob(job.id!))!.getState()).toBe('active')
    } finally {
      bullmqChannels.end.unsubscribe(onEnd)
    }
  })

  it('a job too late as well is not counted expired: it ends lock_lost, unrun, with no expire message', async () => {
    const { queue, name } = await redis.queue()
    const ends = collect(bullmqChannels.end)
    const expires = collect(bullmqChannels.expire)
    let calls = 0
    // A minute left, two asked for: the job is too late when the reading
    // comes back (what a job past its deadline is, without waiting for one).
    const processor = withDeadline(
      async () => {
        calls++
      },
      { minBudgetMs: 120_000 },
    )
    const worker = redis.worker(name, processor, { lockDuration: 400 })
    const { job, refused } = await loseLockWhileReadingClock(worker, queue, (id) =>
      redis.client().del(`bull:${name}:${id}:lock`),
    )

    // BullMQ was handed the attempt's error and refused it (the lock is gone).
    await refused
    expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 0 })
    expect(expires.filter((m) => m.queue === name)).toHaveLength(0)
    const end = ends.filter((m) => m.queue === name)
    expect(end.map((m) => m.outcome)).toEqual(['lock_lost'])
    expect(isJobLockLost(end[0]!.error)).toBe(true)
    expect(end[0]!.error).toMatchObject({ why: 'renewal_failed', jobId: job.id })
    expect(end[0]!.enforcedOutcome).toBeUndefined()
    expect(calls).toBe(0)
  })
})
