import { currentDeadline, Deadline, ManualClock } from '@hourglass/core'
import type { Job, JobsOptions } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { addWithDeadline, bullmqChannels, withDeadline } from '../src/index.js'
import { readStoredDeadline } from '../src/storedDeadline.js'
import { collect, finished } from './support/observe.js'
import { available, redisNowMs, useRedisQueues } from './support/redisQueues.js'

// `job.opts.hourglass` is whatever was written to Redis: addWithDeadline's
// `{ expiresAtMs, budgetMs }`, or another producer's (another language, a
// hand-written `queue.add`). A job that recorded no budget used to keep any
// expiry it carried — one stored in µs gave the processor a deadline 57,000
// years away — and a malformed budget was read as "none".

const HOUR_MS = 3_600_000

describe.skipIf(!available)('withDeadline: deadlines written by other producers', () => {
  const redis = useRedisQueues()

  it('a job that recorded no budgetMs is given at most maxMs (an hour by default), whatever its expiry says', async () => {
    const client = redis.client()
    // The worker's timers on a manual clock: what a job is given is read
    // before any local time passes. Only the near expiry runs on real time
    // (the Redis clock's), with seconds to spare on a loaded box.
    const run = async (options: { maxMs?: number }) => {
      const now = await redisNowMs(client)
      const stored: Record<string, unknown> = {
        // A unit slip: µs on the wall clock, ~57,000 years away.
        micros: { expiresAtMs: Date.now() * 1000 },
        far: { expiresAtMs: Number.MAX_VALUE },
        // A budget no addWithDeadline records (beyond 2^31-1 ms) vouches for nothing either.
        hugeBudget: { expiresAtMs: Number.MAX_VALUE, budgetMs: Number.MAX_VALUE },
        microsBudget: { expiresAtMs: Date.now() * 1000, budgetMs: 60_000_000_000 },
        // A near expiry is kept: the cap only ever shortens.
        near: { expiresAtMs: now + 30_000 },
      }
      const { queue, events, name } = await redis.queue()
      const starts = collect(bullmqChannels.start)
      const seen: Record<string, number | undefined> = {}
      redis.worker(
        name,
        withDeadline(
          async (job: Job) => {
            seen[job.name] = currentDeadline()?.remaining()
            return 'ran'
          },
          { ...options, clock: new ManualClock() },
        ),
      )
      for (const [jobName, hourglass] of Object.entries(stored)) {
        const job = await queue.add(jobName, {}, { hourglass } as JobsOptions)
        expect(await finished(job, events, queue)).toMatchObject({ ok: true, value: 'ran' })
      }
      return { seen, starts }
    }

    const byDefault = await run({})
    expect(byDefault.seen.micros).toBe(HOUR_MS)
    expect(byDefault.seen.far).toBe(HOUR_MS)
    expect(byDefault.seen.hugeBudget).toBe(HOUR_MS)
    expect(byDefault.seen.microsBudget).toBe(HOUR_MS)
    expect(byDefault.seen.near).toBeLessThanOrEqual(30_000)
    for (const start of byDefault.starts) expect(start.remainingMs).toBeLessThanOrEqual(HOUR_MS)

    const capped = await run({ maxMs: 60_000 })
    expect(capped.seen.micros).toBe(60_000)
    expect(capped.seen.far).toBe(60_000)
    expect(capped.seen.hugeBudget).toBe(60_000)
    expect(capped.seen.near).toBeLessThanOrEqual(30_000)
  })

  it('a job whose stored expiresAtMs or budgetMs is not a finite number ≥ 0 runs as a job without a deadline: no deadline, not failed, nothing counted or reported', async () => {
    const { queue, events, name } = await redis.queue()
    const client = redis.client()
    const now = await redisNowMs(client)
    const starts = collect(bullmqChannels.start)
    const expires = collect(bullmqChannels.expire)
    // Some values cannot pass through queue.add: BullMQ drops null entries,
    // refuses NaN and turns Infinity into null. They are written into the
    // job's stored options in Redis instead, as a producer in another
    // language could; 1e400 is what JSON.parse reads as Infinity. (NaN has
    // no JSON form, so no worker ever reads one.)
    const raw: Record<string, string> = { '"<null>"': 'null', '"<infinity>"': '1e400' }
    const stored: Record<string, unknown> = {
      negativeExpiry: { expiresAtMs: -5, budgetMs: 500 },
      textExpiry: { expiresAtMs: String(now + 60_000), budgetMs: 500 },
      nullExpiry: { expiresAtMs: '<null>', budgetMs: 500 },
      infiniteExpiry: { expiresAtMs: '<infinity>', budgetMs: 500 },
      textBudget: { expiresAtMs: now + 60_000, budgetMs: '500' },
      negativeBudget: { expiresAtMs: now + 60_000, budgetMs: -1 },
      nullBudget: { expiresAtMs: now + 60_000, budgetMs: '<null>' },
      infiniteBudget: { expiresAtMs: now + 60_000, budgetMs: '<infinity>' },
    }
    // Added before any worker exists, so their stored options can be edited
    // before one takes them.
    const jobs: Job[] = []
    for (const [jobName, hourglass] of Object.entries(stored)) {
      jobs.push(await queue.add(jobName, {}, { hourglass } as JobsOptions))
    }
    for (const job of jobs) {
      const key = `${queue.qualifiedName}:${job.id}`
      let opts = await client.hget(key, 'opts')
      expect(opts).toContain('"hourglass"')
      for (const [placeholder, json] of Object.entries(raw)) opts = opts!.replace(placeholder, json)
      await client.hset(key, 'opts', opts!)
    }

    const seen: Record<string, Deadline | undefined | 'not run'> = {}
    const read: Record<string, unknown> = {}
    for (const job of jobs) seen[job.name] = 'not run'
    const processor = withDeadline(async (job: Job) => {
      seen[job.name] = currentDeadline()
      read[job.name] = (job.opts as { hourglass?: unknown }).hourglass
      return 'ran'
    })
    redis.worker(name, processor)
    for (const job of jobs) {
      const result = { job: job.name, ...(await finished(job, events, queue)) }
      expect(result).toMatchObject({ job: job.name, ok: true, value: 'ran' })
    }
    // The edited values are what the worker read.
    expect(read).toMatchObject({
      nullExpiry: { expiresAtMs: null },
      infiniteExpiry: { expiresAtMs: Number.POSITIVE_INFINITY },
      nullBudget: { budgetMs: null },
      infiniteBudget: { budgetMs: Number.POSITIVE_INFINITY },
    })
    expect(seen).toEqual(Object.fromEntries(jobs.map((job) => [job.name, undefined])))
    expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 0 })
    expect(starts).toEqual([])
    expect(expires).toEqual([])
  })

  it('a job added by addWithDeadline keeps its whole budget, even one longer than maxMs: the cap is for jobs that recorded none', async () => {
    const { queue, events, name } = await redis.queue()
    const adds = collect(bullmqChannels.add)
    const starts = collect(bullmqChannels.start)
    const seen: Record<string, number | undefined> = {}
    redis.worker(
      name,
      withDeadline(
        async (job: Job) => {
          seen[job.name] = currentDeadline()?.remaining()
          return 'ran'
        },
        { maxMs: 1_000 },
      ),
    )
    const budgets = { short: 60_000, long: 2 * HOUR_MS }
    for (const [jobName, ms] of Object.entries(budgets)) {
      // On a manual clock the producer's deadline does not move while the job
      // is added: the budget stored is exactly the one given.
      const deadline = Deadline.after(ms, { clock: new ManualClock() })
      const job = await addWithDeadline(queue, jobName, {}, { deadline })
      const { budgetMs } = (job.opts as { hourglass: { budgetMs: number } }).hourglass
      expect(budgetMs).toBe(ms)
      expect(await finished(job, events, queue)).toMatchObject({ ok: true, value: 'ran' })
    }
    // What is left of each on the Redis clock: never more than its budget,
    // far more than the worker's 1 s maxMs (seconds of margin for a loaded box).
    expect(seen.short).toBeLessThanOrEqual(60_000)
    expect(seen.short).toBeGreaterThan(30_000)
    expect(seen.long).toBeLessThanOrEqual(2 * HOUR_MS)
    expect(seen.long).toBeGreaterThan(2 * HOUR_MS - 30_000)
    // The messages report the budget the job was added with, as before.
    expect(adds).toHaveLength(2)
    expect(starts.map((m) => m.budgetMs)).toEqual(adds.map((m) => m.budgetMs))
  })
})

// NaN cannot reach a worker through Redis (JSON has no form for it), but the
// reader must not depend on that.
it('reads NaN, like any value that is not a finite number ≥ 0, as no deadline; a missing budgetMs as none recorded', () => {
  const read = (hourglass: unknown) => readStoredDeadline({ hourglass })
  expect(read({ expiresAtMs: Number.NaN, budgetMs: 500 })).toBeUndefined()
  expect(read({ expiresAtMs: 1_000, budgetMs: Number.NaN })).toBeUndefined()
  expect(read({ expiresAtMs: 1_000, budgetMs: Number.NEGATIVE_INFINITY })).toBeUndefined()
  expect(read({ expiresAtMs: 1_000 })).toEqual({ expiresAtMs: 1_000, budgetMs: undefined })
  expect(read({ expiresAtMs: 1_000, budgetMs: 0 })).toEqual({ expiresAtMs: 1_000, budgetMs: 0 })
})
