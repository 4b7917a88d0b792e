import { once } from 'node:events'
import { currentDeadline, Deadline, ManualClock } from '@hourglass/core'
import type { Job } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { revokedProxy } from '../../../test/support/unreadableValues.js'
import { addWithDeadline, bullmqChannels, withDeadline } from '../src/index.js'
import { collect, finished, signal } from './support/observe.js'
import { available, useRedisQueues } from './support/redisQueues.js'

// A processor rejects with anything: `reject()` with no argument in a
// hand-made promise is undefined. BullMQ reads `err.message` of what it is
// handed (Worker.handleFailed) and throws on undefined, null or a revoked
// Proxy: it only emits that TypeError on the worker's `error` event and
// leaves the job in active, unrecorded, until the stall check puts it back
// in wait — a second run whatever `attempts` says, and a job whose deadline
// ends first failed as "back from a stalled worker", a stall interval late.

describe.skipIf(!available)(
  'withDeadline: an attempt with time left that rejects with something BullMQ cannot read',
  () => {
    const redis = useRedisQueues()

    it.each([
      ['undefined', () => undefined, 'undefined'],
      ['null', () => null, 'null'],
      ['a revoked Proxy', revokedProxy, 'an object'],
    ])(
      '%s: the job fails at once, once, with a reason naming it, and the worker reports no error',
      async (_name, make, shown) => {
        const { queue, events, name } = await redis.queue()
        const ends = collect(bullmqChannels.end)
        let runs = 0
        const worker = redis.worker(
          name,
          withDeadline(async () => {
            runs++
            throw make()
          }),
        )
        const workerErrors: unknown[] = []
        worker.on('error', (error) => workerErrors.push(error))
        const job: Job = await addWithDeadline(
          queue,
          'rejects',
          {},
          { deadline: Deadline.after(60_000), attempts: 1 },
        )

        const end = await finished(job, events, queue)

        expect(end).toMatchObject({ ok: false, state: 'failed', attemptsMade: 1 })
        expect(end.failedReason).toBe(`the processor rejected with ${shown}, not an error`)
        expect(runs).toBe(1)
        expect(workerErrors).toEqual([])
        expect(ends.filter((m) => m.jobId === job.id).map((m) => m.outcome)).toEqual(['failed'])
      },
      10_000,
    )

    it('after its deadline stopped the attempt: the deadline error quotes what was thrown, not retried', async () => {
      const { queue, events, name } = await redis.queue()
      const clock = new ManualClock()
      const started = signal<Deadline | undefined>()
      redis.worker(
        name,
        withDeadline(
          async (_job, _token, jobSignal) => {
            started.resolve(currentDeadline())
            await once(jobSignal!, 'abort')
            throw undefined
          },
          { clock },
        ),
      )
      const job = await addWithDeadline(
        queue,
        'stopped',
        {},
        { deadline: Deadline.after(60_000, { clock: new ManualClock() }), attempts: 3 },
      )
      const deadline = await started.promise
      clock.advance(deadline!.remaining() + 1)

      const end = await finished(job, events, queue)
      expect(end).toMatchObject({ state: 'failed', attemptsMade: 1 })
      // The deadline's own error, not a TypeError about the value: it reads what was thrown itself.
      expect(end.failedReason).toMatch(
        /^deadline_exceeded: job \d+ .* was stopped by its deadline \(added with \d+ ms left\)(: undefined)?$/,
      )
    })
  },
)
