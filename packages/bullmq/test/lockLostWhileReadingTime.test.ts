import { currentDeadline, Deadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import {
  addWithDeadline,
  type BullmqEndMessage,
  bullmqChannels,
  isJobLockLost,
  withDeadline,
} from '../src/index.js'
import { signal } from './support/observe.js'
import { available, useRedisQueues } from './support/redisQueues.js'

/** The script client BullMQ's worker runs its commands on (job.backend.client is the same). */
interface ScriptClient {
  runCommand(name: string, args: unknown[]): Promise<unknown>
}

// withDeadline reads the Redis clock before an attempt starts. It listened
// for the worker's `lockRenewalFailed` only after that reading came back, so
// a lock lost during the round trip (a renewal sent before the reading, or a
// slow reply) was never heard: the attempt ran with a live signal and
// deadline, its calls not aborted, while the stall check handed the job to
// another worker. The reading is held here (the worker's client sends it
// only once the test lets it) until the worker has reported the lock lost.
describe.skipIf(!available)('a lock lost while the worker reads the Redis clock', () => {
  const redis = useRedisQueues()

  it('still stops the attempt: it starts with its signal and deadline aborted by JobLockLostError, and ends lock_lost', async () => {
    const { queue, name } = await redis.queue()
    const started = signal<{ aborted: boolean; reason: unknown; deadlineDone: boolean }>()
    const ended = signal<BullmqEndMessage>()
    bullmqChannels.end.subscribe(ended.resolve)
    const worker = redis.worker(
      name,
      withDeadline(async (_job, _token, jobSignal) => {
        started.resolve({
          aborted: jobSignal!.aborted,
          reason: jobSignal!.reason,
          deadlineDone: currentDeadline()?.done === true,
        })
        // Runs until stopped (the deadline, a minute, is not what ends it;
        // unfixed, the test's force close does).
        await new Promise((_, reject) => {
          if (jobSignal!.aborted) reject(jobSignal!.reason)
          jobSignal!.addEventListener('abort', () => reject(jobSignal!.reason))
        })
      }),
      // Renewals every 100 ms: the removed lock is reported soon.
      { lockDuration: 400 },
    )
    const client = await (worker as unknown as { backend: { client: Promise<ScriptClient> } })
      .backend.client
    const timeAsked = signal()
    const letTimeGo = signal()
    const send = client.runCommand
    // BullMQ's ioredis proxy takes a stub of runCommand (its override table).
    client.runCommand = (command, args) => {
      if (command !== 'hourglassTime') return send(command, args)
      timeAsked.resolve()
      return letTimeGo.promise.then(() => send(command, args))
    }
    const lost = signal<unknown[]>()
    worker.on('lockRenewalFailed', lost.resolve)
    try {
      const job = await addWithDeadline(queue, 'j', {}, { deadline: Deadline.after(60_000) })
      await timeAsked.promise
      // As if the lock had expired while the worker stalled.
      await redis.client().del(`bull:${name}:${job.id}:lock`)
      expect(await lost.promise).toContain(job.id)
      letTimeGo.resolve()

      const seen = await started.promise
      expect(seen.aborted).toBe(true)
      expect(isJobLockLost(seen.reason)).toBe(true)
      expect(seen.reason).toMatchObject({ why: 'renewal_failed', jobId: job.id, queue: name })
      expect(seen.deadlineDone).toBe(true)
      const end = await ended.promise
      expect(end.outcome).toBe('lock_lost')
      expect(end.error).toBe(seen.reason)
    } finally {
      bullmqChannels.end.unsubscribe(ended.resolve)
      letTimeGo.resolve()
    }
  })
})
