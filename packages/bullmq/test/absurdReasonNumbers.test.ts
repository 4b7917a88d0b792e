import type { JobsOptions } from 'bullmq'
import { describe, expect, it } from 'vitest'
import { revokedProxy } from '../../../test/support/unreadableValues.js'
import {
  bullmqChannels,
  fromJobError,
  type JobDeadlineExceededError,
  withDeadline,
} from '../src/index.js'
import { collect, finished } from './support/observe.js'
import { available, redisNowMs, useRedisQueues } from './support/redisQueues.js'

// A failedReason is whatever is stored in Redis: the worker's words, or
// anyone's who can write there. Read back, a number of 400 digits came out
// Infinity, and a reason that said more was left than the job had been
// added with came out a negative `elapsedMs`. And the worker itself wrote
// a budget another producer recorded as 1e300 as `added with 1e+300 ms
// left` — a form the reader does not read (digits only): the producer got a
// plain Error, 500 instead of 504, for a job its deadline ended.

const PREFIX = 'deadline_exceeded: '
const BIG = '9'.repeat(400)

const read = (reason: string) =>
  fromJobError(new Error(`${PREFIX}${reason}`)) as JobDeadlineExceededError

describe('fromJobError: numbers in a stored reason that no worker writes', () => {
  it('a number beyond what a double holds exactly is NaN (not stated reliably), never Infinity', () => {
    const reasons = [
      `job 1 of q reached a worker ${BIG} ms after its deadline (added with 5 ms left); not run`,
      `job 1 of q reached a worker 5 ms after its deadline (added with ${BIG} ms left); not run`,
      `job 1 of q reached a worker with ${BIG} ms left, too little to start (no budget recorded); not run`,
      `job 1 of q failed with ${BIG} ms left (added with ${BIG} ms left) and its next attempt, after 1 ms, would not fit; not retried`,
      `job 1 of q was stopped by its deadline (added with ${BIG} ms left)`,
      `job 1 of q reached a worker 9007199254740993 ms after its deadline (added with 5 ms left); not run`,
    ]
    for (const reason of reasons) {
      const error = read(reason)
      expect(error.code, reason).toBe('DEADLINE_EXCEEDED')
      for (const ms of [error.budgetMs, error.elapsedMs]) {
        expect(ms === Number.POSITIVE_INFINITY || ms === Number.NEGATIVE_INFINITY, reason).toBe(
          false,
        )
      }
    }
    expect(read(reasons[1]!).budgetMs).toBeNaN()
    expect(read(reasons[0]!).elapsedMs).toBeNaN()
  })

  it('more left than the job was added with reads as nothing elapsed, not a negative elapsedMs', () => {
    const early = read(
      'job 1 of q reached a worker with 1000 ms left, too little to start (added with 5 ms left); not run',
    )
    expect(early.budgetMs).toBe(5)
    expect(early.elapsedMs).toBe(0)
    const retry = read(
      'job 1 of q failed with 1000 ms left (added with 5 ms left) and its next attempt, after 10 ms, would not fit; not retried',
    )
    expect(retry.elapsedMs).toBe(0)
  })

  it('an honest reason reads as before', () => {
    const late = read(
      'job 1 of q reached a worker 7 ms after its deadline (added with 5 ms left); not run',
    )
    expect([late.budgetMs, late.elapsedMs]).toEqual([5, 12])
    const early = read(
      'job 1 of q reached a worker with 2 ms left, too little to start (added with 5 ms left); not run',
    )
    expect([early.budgetMs, early.elapsedMs]).toEqual([5, 3])
  })

  it('an error whose message cannot be read is returned as it is, not a crash', () => {
    const hostile = new Error('x')
    Object.defineProperty(hostile, 'message', {
      get() {
        throw new Error('no')
      },
    })
    expect(fromJobError(hostile)).toBe(hostile)
  })

  it('a revoked Proxy is returned as it is: asking whether it is an Error throws, and that TypeError replaced the error being handled', () => {
    const proxy = revokedProxy()
    expect(fromJobError(proxy)).toBe(proxy)
  })
})

describe.skipIf(!available)('withDeadline: a recorded budget beyond 2³¹−1 ms', () => {
  const redis = useRedisQueues()

  it('is reported as no budget recorded, in a reason fromJobError reads back, with the real lateness', async () => {
    const client = redis.client()
    const { queue, events, name } = await redis.queue()
    redis.worker(
      name,
      withDeadline(async () => 'ran'),
    )
    const now = await redisNowMs(client)
    // Another producer's: an expiry 5 s past, a budget nobody records.
    const hourglass = { expiresAtMs: now - 5000, budgetMs: 1e300 }
    const job = await queue.add('late', {}, { hourglass } as JobsOptions)
    const end = await finished(job, events, queue)
    expect(end.state).toBe('failed')
    expect(end.failedReason).toMatch(
      /reached a worker \d+ ms after its deadline \(no budget recorded\); not run$/,
    )
    const error = fromJobError(new Error(end.failedReason)) as JobDeadlineExceededError
    expect(error.code).toBe('DEADLINE_EXCEEDED')
    expect(error.budgetRecorded).toBe(false)
    // Late by the 5 s it was stored past (it said 0 ms: 1e300 − 1e300).
    expect(error.elapsedMs - error.budgetMs).toBeGreaterThanOrEqual(5000)
  })

  it('a retry dropped for its back-off says so too', async () => {
    const client = redis.client()
    const { queue, events, name } = await redis.queue()
    redis.worker(
      name,
      withDeadline(async () => {
        throw new Error('upstream down')
      }),
    )
    const now = await redisNowMs(client)
    const hourglass = { expiresAtMs: now + 30_000, budgetMs: 1e300 }
    const job = await queue.add('retry', {}, {
      hourglass,
      attempts: 2,
      backoff: { type: 'fixed', delay: 600_000 },
    } as JobsOptions)
    const end = await finished(job, events, queue)
    expect(end.failedReason).toMatch(/\(no budget recorded\) and its next attempt/)
    const error = fromJobError(new Error(end.failedReason)) as JobDeadlineExceededError
    expect(error.code).toBe('DEADLINE_EXCEEDED')
    expect(error.stage).toBe('retry')
  })
})

describe.skipIf(!available)('withDeadline: a back-off no number of ms states', () => {
  const redis = useRedisQueues()

  // A worker's backoffStrategy may return anything: Infinity ("never"), or a
  // number JavaScript writes with an exponent (1e21 and up). The retry is
  // dropped, rightly; its reason said `after Infinity ms`, which
  // fromJobError did not read: the producer got a plain Error, 500 not 504.
  for (const backoff of [Number.POSITIVE_INFINITY, 1e30]) {
    it(`a retry dropped for a back-off of ${backoff} ms is read back by fromJobError`, async () => {
      const client = redis.client()
      const { queue, events, name } = await redis.queue()
      const ends = collect(bullmqChannels.end)
      redis.worker(
        name,
        withDeadline(async () => {
          throw new Error('upstream down')
        }),
        { settings: { backoffStrategy: () => backoff } },
      )
      const now = await redisNowMs(client)
      const job = await queue.add('retry', {}, {
        hourglass: { expiresAtMs: now + 30_000, budgetMs: 30_000 },
        attempts: 2,
        backoff: { type: 'custom' },
      } as JobsOptions)
      const end = await finished(job, events, queue)
      expect(ends.map((m) => m.outcome)).toEqual(['no_time_to_retry'])
      const error = fromJobError(new Error(end.failedReason)) as JobDeadlineExceededError
      expect(error.code).toBe('DEADLINE_EXCEEDED')
      expect(error.stage).toBe('retry')
      expect(error.budgetMs).toBe(30_000)
    })
  }
})
