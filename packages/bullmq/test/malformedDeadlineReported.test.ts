import { currentDeadline, type Deadline } from '@hourglass/core'
import type { Job, JobsOptions } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { bullmqChannels, withDeadline } from '../src/index.js'
import { type MalformedDeadline, readStoredDeadline } from '../src/storedDeadline.js'
import { collect, finished } from './support/observe.js'
import { available, redisNowMs, useRedisQueues } from './support/redisQueues.js'

// A job whose stored deadline is corrupt runs as a job without one (failing
// it for its options would lose the work). It used to do so silently: no
// count, no message, nothing an operator could see. Each such attempt is
// now reported on `hourglass:bullmq:invalid`, naming the job, the field, the
// value (described, never handed over) and why it was refused.

describe.skipIf(!available)('withDeadline: a malformed stored deadline', () => {
  const redis = useRedisQueues()

  it('runs without a deadline and is reported on hourglass:bullmq:invalid, naming the field, the value and why', async () => {
    const { queue, events, name } = await redis.queue()
    const client = redis.client()
    const now = await redisNowMs(client)
    const invalid = collect(bullmqChannels.invalid)
    const stored: Record<string, unknown> = {
      textExpiry: { expiresAtMs: '1700000000000', budgetMs: 500 },
      negativeExpiry: { expiresAtMs: -5, budgetMs: 500 },
      noExpiry: { budgetMs: 500 },
      infiniteExpiry: { expiresAtMs: '<infinity>', budgetMs: 500 },
      nullBudget: { expiresAtMs: now + 60_000, budgetMs: '<null>' },
      notAnObject: 'soon',
    }
    const jobs: Job[] = []
    for (const [jobName, hourglass] of Object.entries(stored)) {
      jobs.push(await queue.add(jobName, {}, { hourglass } as JobsOptions))
    }
    // What queue.add cannot carry, written into the stored options as a
    // producer in another language could (1e400 is JSON.parse's Infinity).
    for (const job of jobs) {
      const key = `${queue.qualifiedName}:${job.id}`
      const opts = (await client.hget(key, 'opts'))!
      await client.hset(
        key,
        'opts',
        opts.replace('"<infinity>"', '1e400').replace('"<null>"', 'null'),
      )
    }
    const seen: Record<string, Deadline | undefined> = {}
    const processor = withDeadline(async (job: Job) => {
      seen[job.name] = currentDeadline()
      return 'ran'
    })
    redis.worker(name, processor)
    for (const job of jobs) {
      expect(await finished(job, events, queue)).toMatchObject({ ok: true, value: 'ran' })
    }
    expect(seen).toEqual(Object.fromEntries(jobs.map((job) => [job.name, undefined])))
    expect(processor.counts).toEqual({ expired: 0, stopped: 0, retriesDropped: 0 })

    const about = (job: Job) => ({ jobId: job.id, queue: name, name: job.name, attempt: 1 })
    const [textExpiry, negativeExpiry, noExpiry, infiniteExpiry, nullBudget, notAnObject] = jobs
    const notATime = 'not a finite number ≥ 0'
    expect(invalid).toEqual([
      {
        ...about(textExpiry!),
        field: 'expiresAtMs',
        value: "'1700000000000' (a string)",
        reason: notATime,
      },
      { ...about(negativeExpiry!), field: 'expiresAtMs', value: '-5', reason: notATime },
      { ...about(noExpiry!), field: 'expiresAtMs', value: 'undefined', reason: 'missing' },
      { ...about(infiniteExpiry!), field: 'expiresAtMs', value: 'Infinity', reason: notATime },
      { ...about(nullBudget!), field: 'budgetMs', value: 'null', reason: notATime },
      {
        ...about(notAnObject!),
        field: 'hourglass',
        value: "'soon' (a string)",
        reason: 'not an object',
      },
    ])
  })

  it('a job without a deadline, or with a well-formed one, is not reported', async () => {
    const { queue, events, name } = await redis.queue()
    const now = await redisNowMs(redis.client())
    const invalid = collect(bullmqChannels.invalid)
    redis.worker(
      name,
      withDeadline(async () => 'ran'),
    )
    const plain = await queue.add('plain', {})
    const foreign = await queue.add('foreign', {}, {
      hourglass: { expiresAtMs: now + 60_000 },
    } as JobsOptions)
    for (const job of [plain, foreign]) {
      expect(await finished(job, events, queue)).toMatchObject({ ok: true, value: 'ran' })
    }
    expect(invalid).toEqual([])
  })
})

// NaN has no JSON form, so it never reaches a worker through Redis; the
// reader reports it all the same.
it('readStoredDeadline hands every malformed value to onMalformed, and nothing else', () => {
  const problems: MalformedDeadline[] = []
  const read = (hourglass: unknown) =>
    readStoredDeadline({ hourglass }, (problem) => problems.push(problem))
  expect(read({ expiresAtMs: Number.NaN, budgetMs: 500 })).toBeUndefined()
  expect(read({ expiresAtMs: 1_000, budgetMs: -1 })).toBeUndefined()
  expect(read(42)).toBeUndefined()
  expect(read({ expiresAtMs: 1_000 })).toEqual({ expiresAtMs: 1_000, budgetMs: undefined })
  expect(read(undefined)).toBeUndefined()
  expect(read(null)).toBeUndefined()
  expect(problems).toEqual([
    { field: 'expiresAtMs', value: Number.NaN, reason: 'not a finite number ≥ 0' },
    { field: 'budgetMs', value: -1, reason: 'not a finite number ≥ 0' },
    { field: 'hourglass', value: 42, reason: 'not an object' },
  ])
})
