import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { addWithDeadline, bullmqChannels } from '../src/index.js'
import { collect } from './support/observe.js'
import { available, useRedisQueues } from './support/redisQueues.js'

interface ScriptClient {
  runCommand(name: string, args: unknown[]): Promise<unknown>
}

// BullMQ's deduplication `reschedule` (a debounce) keeps the delayed job it
// has — its id, data and options, the stored deadline among them — and moves
// it to the incoming add's delay. That delay was judged by the incoming add's
// deadline only: the kept job was moved past its own, and failed unrun.

describe.skipIf(!available)(
  'deduplication `reschedule`: the delay is judged by the deadline of the job BullMQ keeps and moves',
  () => {
    const redis = useRedisQueues()
    const deduplication = { id: 'reindex-user-1', ttl: 60_000, reschedule: true }
    /** The debounced job BullMQ keeps: delayed 500 ms, with `budgetMs` of its own. */
    const keptJob = (queue: Parameters<typeof addWithDeadline>[0], budgetMs: number) =>
      addWithDeadline(
        queue,
        'reindex',
        { n: 1 },
        {
          deadline: Deadline.after(budgetMs, { clock: new ManualClock() }),
          delay: 500,
          deduplication,
        },
      )

    it("a delay past the kept job's deadline is refused, and the kept job keeps its delay (moved, it would reach a worker after its deadline and fail unrun)", async () => {
      const { queue } = await redis.queue()
      const first = await keptJob(queue, 1_500)
      const second = addWithDeadline(
        queue,
        'reindex',
        { n: 2 },
        {
          deadline: Deadline.after(60_000, { clock: new ManualClock() }),
          delay: 3_000,
          deduplication,
        },
      )
      await expect(second).rejects.toMatchObject({
        code: 'DEADLINE_EXCEEDED',
        message: expect.stringMatching(/would reschedule job .* use deduplication\.replace/),
      })
      const kept = await queue.getJob(first.id!)
      expect(kept!.delay).toBe(500)
      expect(await kept!.getState()).toBe('delayed')
    })

    it("a delay that fits the kept job's deadline reschedules it, as BullMQ does", async () => {
      const { queue } = await redis.queue()
      const first = await keptJob(queue, 10_000)
      const second = await addWithDeadline(
        queue,
        'reindex',
        { n: 2 },
        {
          deadline: Deadline.after(60_000, { clock: new ManualClock() }),
          delay: 3_000,
          deduplication,
        },
      )
      expect(second.id).toBe(first.id)
      expect((await queue.getJob(first.id!))!.delay).toBe(3_000)
    })

    it('a delay given as a numeric string is judged as the number BullMQ reschedules by (tonumber)', async () => {
      const { queue } = await redis.queue()
      const first = await keptJob(queue, 1_500)
      const refusals = collect(bullmqChannels.refuse)
      const second = addWithDeadline(
        queue,
        'reindex',
        { n: 2 },
        {
          deadline: Deadline.after(60_000, { clock: new ManualClock() }),
          // As read from config or the environment.
          delay: '3000' as unknown as number,
          deduplication,
        },
      )
      await expect(second).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED' })
      expect(refusals[0]).toMatchObject({ reason: 'delay', delayMs: 3000 })
      expect((await queue.getJob(first.id!))!.delay).toBe(500)
    })

    it('a caller that leaves while the kept job is read: refused, the kept job keeps its delay', async () => {
      const { queue } = await redis.queue()
      const first = await keptJob(queue, 60_000)
      const client = await (queue as unknown as { backend: { client: Promise<ScriptClient> } })
        .backend.client
      const run = client.runCommand.bind(client)
      const second = Deadline.after(60_000, { clock: new ManualClock() })
      client.runCommand = (name: string, args: unknown[]) => {
        if (name === 'hourglassDedupDelayed') second.cancel(new Error('client left'))
        return run(name, args)
      }
      try {
        await expect(
          addWithDeadline(
            queue,
            'reindex',
            { n: 2 },
            { deadline: second, delay: 3_000, deduplication },
          ),
        ).rejects.toThrow('client left')
      } finally {
        client.runCommand = run
      }
      expect((await queue.getJob(first.id!))!.delay).toBe(500)
    })
  },
)
