import { currentDeadline, Deadline, ManualClock } from '@hourglass/core'
import type { Job } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { addWithDeadline, bullmqChannels, type QueueLike, withDeadline } from '../src/index.js'
import { collect, finished } from './support/observe.js'
import { available, redisNowMs, useRedisQueues } from './support/redisQueues.js'

// addWithDeadline stored whatever its deadline had left, with no upper bound:
// a budget computed from an untrusted value (1e15 ms, 31,000 years) rode with
// the job and every worker honoured it. Like the ingresses' `maxMs`, its own
// cuts the job's budget and expiry (a day by default). No assertion here is
// on milliseconds measured: the clocks are manual, the bounds exact.

const DAY_MS = 86_400_000
const MAX_TIMER_MS = 2 ** 31 - 1

interface Stored {
  expiresAtMs: number
  budgetMs: number
}
const storedOf = (job: Job) => (job.opts as unknown as { hourglass?: Stored }).hourglass

describe.skipIf(!available)('addWithDeadline: maxMs bounds the budget a job is given', () => {
  const redis = useRedisQueues()

  it('cuts a longer budget to a day by default: budget and expiry alike, and says it did', async () => {
    const { queue } = await redis.queue()
    const client = redis.client()
    const adds = collect(bullmqChannels.add)
    const enqueues = collect(bullmqChannels.enqueue)
    const deadline = Deadline.after(1e15, { clock: new ManualClock() })
    const before = await redisNowMs(client)
    const job = await addWithDeadline(queue, 'far', {}, { deadline })
    const after = await redisNowMs(client)

    const stored = storedOf((await queue.getJob(job.id!))!)!
    expect(stored.budgetMs).toBe(DAY_MS)
    expect(stored.expiresAtMs).toBeGreaterThanOrEqual(Math.floor(before + DAY_MS))
    expect(stored.expiresAtMs).toBeLessThanOrEqual(after + DAY_MS)
    expect(adds).toEqual([expect.objectContaining({ budgetMs: DAY_MS, clamped: true })])
    expect(adds[0]!.remainingMs).toBeLessThanOrEqual(DAY_MS)
    expect(enqueues).toEqual([expect.objectContaining({ budgetMs: DAY_MS, clamped: true })])
  })

  it('takes its own maxMs, cut to 2^31-1 like every maxMs; a budget within it is kept as it is', async () => {
    const { queue } = await redis.queue()
    const adds = collect(bullmqChannels.add)
    const clock = new ManualClock()
    const add = (ms: number, maxMs: number) =>
      addWithDeadline(queue, 'job', {}, { deadline: Deadline.after(ms, { clock }), maxMs })
    expect(storedOf(await add(120_000, 60_000))!.budgetMs).toBe(60_000)
    expect(storedOf(await add(5_000, 60_000))!.budgetMs).toBe(5_000)
    expect(storedOf(await add(1e15, 1e15))!.budgetMs).toBe(MAX_TIMER_MS)
    expect(adds.map((m) => m.clamped)).toEqual([true, false, true])
  })

  it('a worker gives the cut job no more than maxMs', async () => {
    const { queue, events, name } = await redis.queue()
    let seen: number | undefined
    redis.worker(
      name,
      withDeadline(async () => {
        seen = currentDeadline()?.remaining()
      }),
    )
    const job = await addWithDeadline(
      queue,
      'cut',
      {},
      {
        deadline: Deadline.after(1e15),
        maxMs: 60_000,
      },
    )
    expect(await finished(job, events, queue)).toMatchObject({ ok: true })
    expect(seen).toBeGreaterThan(0)
    expect(seen).toBeLessThanOrEqual(60_000)
  })

  it('a maxMs of null is the default (a day), as for a worker and an ingress', async () => {
    const { queue } = await redis.queue()
    const clock = new ManualClock()
    const deadline = Deadline.after(2 * 86_400_000, { clock })
    const job = await addWithDeadline(
      queue,
      'job',
      {},
      { deadline, maxMs: null as unknown as number },
    )
    expect(storedOf(job)!.budgetMs).toBe(86_400_000)
  })

  it('an infinite deadline (Deadline.after(Infinity), as never()) is no budget: the job is added without one', async () => {
    const { queue } = await redis.queue()
    const job = await addWithDeadline(queue, 'plain', {}, { deadline: Deadline.after(Infinity) })
    expect(storedOf((await queue.getJob(job.id!))!)).toBeUndefined()
  })
})

describe('addWithDeadline: a maxMs that is not a finite number > 0', () => {
  // Refused before the queue is touched, with or without a deadline.
  const queue: QueueLike<unknown, unknown, string> = {
    name: 'q',
    qualifiedName: 'bull:q',
    backend: undefined,
    add: () => {
      throw new Error('the queue must not be touched')
    },
  }

  it('is a RangeError (a number) or a TypeError (another type) naming it and the value', async () => {
    const cases: [unknown, typeof RangeError | typeof TypeError, string][] = [
      [0, RangeError, '0'],
      [-1, RangeError, '-1'],
      [Number.NaN, RangeError, 'NaN'],
      [Number.POSITIVE_INFINITY, RangeError, 'Infinity'],
      ['60000', TypeError, "'60000' (a string)"],
    ]
    for (const [maxMs, kind, shown] of cases) {
      const message = `addWithDeadline: maxMs must be a finite number of ms > 0, got ${shown}`
      for (const deadline of [Deadline.after(5_000), undefined]) {
        const added = addWithDeadline(queue, 'job', {}, { deadline, maxMs: maxMs as number })
        await expect(added, String(maxMs)).rejects.toThrow(new kind(message))
        await expect(added).rejects.toBeInstanceOf(kind)
      }
    }
  })
})

describe('addWithDeadline: a deadline option that is not a Deadline', () => {
  const queue: QueueLike<unknown, unknown, string> = {
    name: 'q',
    qualifiedName: 'bull:q',
    backend: undefined,
    add: () => {
      throw new Error('the queue must not be touched')
    },
  }

  it('is a TypeError naming what was given, before anything is enqueued: a number of ms, a Date, 0 (not "no deadline")', async () => {
    const cases: [unknown, string][] = [
      [60_000, '60000'],
      [0, '0'],
      [new Date(Date.now() + 60_000), 'an object'],
      ['5000', "'5000' (a string)"],
      [{ expiresAt: 1 }, 'an object'],
    ]
    for (const [deadline, shown] of cases) {
      const added = addWithDeadline(queue, 'job', {}, { deadline: deadline as Deadline })
      await expect(added, shown).rejects.toThrow(
        new TypeError(
          `addWithDeadline: deadline must be a Deadline from @hourglass/core (Deadline.after(ms)), got ${shown}`,
        ),
      )
      await expect(added).rejects.toBeInstanceOf(TypeError)
    }
  })
})
