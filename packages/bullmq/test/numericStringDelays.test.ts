import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { addWithDeadline, bullmqChannels, withDeadline } from '../src/index.js'
import { collect } from './support/observe.js'
import { available, useRedisQueues } from './support/redisQueues.js'

// BullMQ's scripts read a delay or a timestamp with Lua's `tonumber`: a
// numeric string (a config or environment value) is that many ms there. The
// checks read it as none, and let through what they refuse as a number.

describe.skipIf(!available)(
  'a delay or timestamp given as a numeric string is judged as BullMQ applies it',
  () => {
    const redis = useRedisQueues()

    it("a fixed back-off of '60000' that cannot fit drops the retry now, as 60000 would: not parked to fail unrun a minute later", async () => {
      const { queue, name } = await redis.queue()
      const ends = collect(bullmqChannels.end)
      const processor = withDeadline(async () => {
        throw new Error('upstream 503')
      })
      redis.worker(name, processor)
      await addWithDeadline(
        queue,
        'flaky',
        {},
        {
          deadline: Deadline.after(5_000, { clock: new ManualClock() }),
          attempts: 3,
          // As read from the environment (BullMQ's fixed strategy returns it as given).
          backoff: { type: 'fixed', delay: '60000' as unknown as number },
        },
      )
      await expect.poll(() => ends.length).toBe(1)
      expect([ends[0]!.outcome, ends[0]!.retryDelayMs]).toEqual(['no_time_to_retry', 60_000])
      expect(processor.counts.retriesDropped).toBe(1)
      // The end is published when the attempt ends, before BullMQ's worker
      // moves the job (a suite run read it still active): waited for.
      await expect.poll(async () => (await queue.getJobs(['failed', 'delayed'])).length).toBe(1)
      const [job] = await queue.getJobs(['failed', 'delayed'])
      expect(await job!.getState()).toBe('failed')
      expect(job!.failedReason).toMatch(/after 60000 ms, would not fit; not retried/)
    })

    it("job.changeDelay('60000') past the job's deadline is refused as changeDelay(60000) is: the job keeps its delay", async () => {
      const { queue } = await redis.queue()
      const job = await addWithDeadline(
        queue,
        'later',
        {},
        { deadline: Deadline.after(5_000, { clock: new ManualClock() }), delay: 1_000 },
      )
      await expect(job.changeDelay('60000' as unknown as number)).rejects.toMatchObject({
        code: 'DEADLINE_EXCEEDED',
        message: expect.stringMatching(/^job\.changeDelay: /),
      })
      expect((await queue.getJob(job.id!))!.delay).toBe(1_000)
    })

    it('a delay counted from a timestamp given as a numeric string a minute ahead is refused under a 5 s deadline, as one given as a number', async () => {
      const { queue } = await redis.queue()
      const add = addWithDeadline(
        queue,
        'later',
        {},
        {
          deadline: Deadline.after(5_000, { clock: new ManualClock() }),
          delay: 500,
          timestamp: String(Date.now() + 60_000) as unknown as number,
        },
      )
      await expect(add).rejects.toThrow(/counted from its timestamp/)
      expect(await queue.count()).toBe(0)
      expect((await queue.getJobCounts('delayed')).delayed).toBe(0)
    })
  },
)
