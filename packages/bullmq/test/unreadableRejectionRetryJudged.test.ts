import { Deadline } from '@hourglass/core'
import type { Job } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { revokedProxy } from '../../../test/support/unreadableValues.js'
import { addWithDeadline, bullmqChannels, withDeadline } from '../src/index.js'
import { collect, finished } from './support/observe.js'
import { available, useRedisQueues } from './support/redisQueues.js'

// A processor rejects with something BullMQ cannot read (`reject()` with no
// argument, null, a revoked Proxy): BullMQ is handed a TypeError naming it
// (nonErrorRejection.test.ts). Its retry must be judged as that TypeError's,
// which BullMQ retries: judged on the raw value, BullMQ's own
// `shouldRetryJob` threw reading its `name`, the attempt was judged "no
// retry" (`end` said `failed`), and BullMQ then retried the TypeError
// unjudged — parked in delayed for a back-off past the deadline, to fail
// unrun as "reached a worker … after its deadline".
describe.skipIf(!available)(
  'withDeadline: the retry of a rejection BullMQ cannot read is judged as BullMQ meets it',
  () => {
    const redis = useRedisQueues()

    it.each([
      ['undefined', () => undefined],
      ['null', () => null],
      ['a revoked Proxy', revokedProxy],
    ])(
      '%s, with a back-off that would end past the deadline: dropped now, not parked in delayed',
      async (_name, make) => {
        const { queue, events, name } = await redis.queue()
        const ends = collect(bullmqChannels.end)
        let runs = 0
        const processor = withDeadline(async () => {
          runs++
          throw make()
        })
        redis.worker(name, processor)
        const job: Job = await addWithDeadline(
          queue,
          'rejects',
          {},
          {
            deadline: Deadline.after(5_000),
            attempts: 3,
            backoff: { type: 'fixed', delay: 60_000 },
          },
        )

        const end = await finished(job, events, queue)

        expect(end).toMatchObject({ ok: false, state: 'failed', attemptsMade: 1 })
        expect(end.failedReason).toMatch(
          /^deadline_exceeded: job \d+ of .* its next attempt, after 60000 ms, would not fit/,
        )
        expect(runs).toBe(1)
        expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 1 })
        expect(ends.filter((m) => m.jobId === job.id).map((m) => m.outcome)).toEqual([
          'no_time_to_retry',
        ])
      },
    )

    it('undefined, with a back-off that fits: retried, and the end says so', async () => {
      const { queue, events, name } = await redis.queue()
      const ends = collect(bullmqChannels.end)
      redis.worker(
        name,
        withDeadline(async () => {
          throw undefined
        }),
      )
      const job: Job = await addWithDeadline(
        queue,
        'rejects',
        {},
        { deadline: Deadline.after(60_000), attempts: 2, backoff: { type: 'fixed', delay: 50 } },
      )

      const end = await finished(job, events, queue)

      expect(end).toMatchObject({ state: 'failed', attemptsMade: 2 })
      expect(end.failedReason).toBe('the processor rejected with undefined, not an error')
      expect(ends.filter((m) => m.jobId === job.id).map((m) => m.outcome)).toEqual([
        'retry',
        'failed',
      ])
    })
  },
)
