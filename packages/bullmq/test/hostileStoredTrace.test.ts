import { Deadline } from '@hourglass/core'
import type { JobsOptions } from 'bullmq'
import { describe, expect, it, onTestFinished } from 'vitest'
import {
  addWithDeadline,
  type BullmqEnqueueMessage,
  bullmqChannels,
  withDeadline,
} from '../src/index.js'
import { type MalformedDeadline, readStoredDeadline } from '../src/storedDeadline.js'
import { collect, finished } from './support/observe.js'
import { available, redisNowMs, useRedisQueues } from './support/redisQueues.js'

// A job's stored options are whatever any producer with Redis access wrote.
// The trace read back with a deadline was bounded to 8 entries of 512
// characters by the length of each value only: a key of any length (100 KB
// here) rode on every start, end and expire message of every attempt, into
// whatever a tracer does with them. And an `hourglass` option that is an
// array, not an object, was reported as a missing `expiresAtMs`.

const HUGE_KEY = 'k'.repeat(100_000)

describe.skipIf(!available)('withDeadline: hostile trace entries stored with a job', () => {
  const redis = useRedisQueues()

  it('hands back only entries whose key and value are at most 512 characters', async () => {
    const { queue, events, name } = await redis.queue()
    const now = await redisNowMs(redis.client())
    const starts = collect(bullmqChannels.start)
    const ends = collect(bullmqChannels.end)
    redis.worker(
      name,
      withDeadline(async () => 'ran'),
    )
    const hourglass = {
      expiresAtMs: now + 60_000,
      budgetMs: 60_000,
      trace: { [HUGE_KEY]: 'x', ['t'.repeat(513)]: 'y', traceparent: '00-abc-def-01' },
    }
    const job = await queue.add('foreign', {}, { hourglass } as JobsOptions)
    expect(await finished(job, events, queue)).toMatchObject({ ok: true, value: 'ran' })
    expect(starts.map((m) => m.trace)).toEqual([{ traceparent: '00-abc-def-01' }])
    expect(ends.map((m) => m.trace)).toEqual([{ traceparent: '00-abc-def-01' }])
  })

  // The producer's side: a tracer's `enqueue` entries were stored and
  // handed to `add` subscribers as written — a 100 KB name, a number, a
  // twelfth entry — where every worker message carries them bounded.
  it('stores, and reports on add, the trace as a worker reads it back', async () => {
    const { queue } = await redis.queue()
    const write = (message: BullmqEnqueueMessage) => {
      const trace = message.trace as Record<string, unknown>
      trace[HUGE_KEY] = 'x'
      trace.traceparent = '00-abc-def-01'
      trace.sampled = 1
      trace.tracestate = 'v'.repeat(513)
      for (let i = 0; i < 10; i++) trace[`e${i}`] = String(i)
    }
    bullmqChannels.enqueue.subscribe(write)
    onTestFinished(() => bullmqChannels.enqueue.unsubscribe(write))
    const adds = collect(bullmqChannels.add)
    const job = await addWithDeadline(queue, 'traced', {}, { deadline: Deadline.after(60_000) })
    const bounded = {
      traceparent: '00-abc-def-01',
      ...Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`e${i}`, String(i)])),
    }
    expect(adds.map((m) => m.trace)).toEqual([bounded])
    const stored = (await queue.getJob(job.id!))!.opts as { hourglass?: { trace?: unknown } }
    expect(stored.hourglass?.trace).toEqual(bounded)
  })
})

describe('readStoredDeadline: trace and option shape', () => {
  it('drops a trace entry whose key is longer than 512 characters, as one whose value is', () => {
    const read = readStoredDeadline({
      hourglass: {
        expiresAtMs: 1_000,
        budgetMs: 500,
        trace: { [HUGE_KEY]: 'x', ['t'.repeat(512)]: 'kept', tracestate: 'v'.repeat(513) },
      },
    })
    expect(read?.trace).toEqual({ ['t'.repeat(512)]: 'kept' })
  })

  it('reports an array as the hourglass option that is not an object, not as a missing expiresAtMs', () => {
    const problems: MalformedDeadline[] = []
    expect(readStoredDeadline({ hourglass: [1_000, 500] }, (p) => problems.push(p))).toBeUndefined()
    expect(problems).toEqual([{ field: 'hourglass', value: [1_000, 500], reason: 'not an object' }])
  })
})
