import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import {
  Deadline,
  DeadlineExceededError,
  isDeadlineExceeded,
  isExpiryOf,
  MAX_RESERVE_MS,
  ManualClock,
} from '@hourglass/core'
import { deadlineErrors } from '@hourglass/express'
import express from 'express'
import { describe, expect, it } from 'vitest'
import {
  addWithDeadline,
  fromJobError,
  isJobDeadlineExceeded,
  type JobDeadlineExceededDetails,
  JobDeadlineExceededError,
  withDeadline,
} from '../src/index.js'
import { available, redisClockPasses, storedExpiry, useRedisQueues } from './support/redisQueues.js'

/** What a producer's `job.waitUntilFinished()` rejects with: BullMQ's `new Error(failedReason)`. */
function asSeenByProducer(details: JobDeadlineExceededDetails): Error {
  return new Error(new JobDeadlineExceededError(details).message)
}

describe('fromJobError: a job failed by its deadline, as its producer sees it', () => {
  it('reads each form the worker writes back into a JobDeadlineExceededError with the same details and message', () => {
    const cases: [JobDeadlineExceededDetails, Partial<JobDeadlineExceededError>][] = [
      [
        { stage: 'queued', jobId: '7', queue: 'reports', budgetMs: 100, elapsedMs: 130 },
        { stage: 'queued', budgetMs: 100, elapsedMs: 130, budgetRecorded: true },
      ],
      [
        {
          stage: 'queued',
          jobId: '8',
          queue: 'reports',
          budgetMs: 100,
          elapsedMs: 97,
          stalled: true,
        },
        { stage: 'queued', budgetMs: 100, elapsedMs: 97 },
      ],
      [
        {
          stage: 'queued',
          jobId: '9',
          queue: 'reports',
          budgetMs: 0,
          elapsedMs: 40,
          budgetRecorded: false,
        },
        { stage: 'queued', budgetMs: 0, elapsedMs: 40, budgetRecorded: false },
      ],
      [
        {
          stage: 'retry',
          jobId: 'weekly of march', // a custom id holding " of "
          queue: 'reports',
          budgetMs: 300,
          elapsedMs: 250,
          retryDelayMs: 200,
          cause: new Error('upstream said 503: was stopped by its deadline (added with 1 ms left)'),
        },
        { stage: 'retry', jobId: 'weekly of march', budgetMs: 300, elapsedMs: 250 },
      ],
      [
        {
          stage: 'running',
          jobId: 'a b',
          queue: 'reports',
          budgetMs: 194,
          elapsedMs: 200,
          cause: new DeadlineExceededError({ budgetMs: 180, elapsedMs: 183 }),
        },
        { stage: 'running', jobId: 'a b', queue: 'reports', budgetMs: 194, elapsedMs: 194 },
      ],
      [
        {
          stage: 'running',
          jobId: '3',
          queue: 'reports',
          budgetMs: 50,
          elapsedMs: 50,
          budgetRecorded: false,
        },
        { stage: 'running', budgetRecorded: false },
      ],
    ]
    for (const [details, expected] of cases) {
      const seen = asSeenByProducer(details)
      const read = fromJobError(seen)
      expect(isJobDeadlineExceeded(read), seen.message).toBe(true)
      expect(isDeadlineExceeded(read)).toBe(true)
      expect(read).toMatchObject({
        code: 'DEADLINE_EXCEEDED',
        jobId: details.jobId,
        queue: details.queue,
        // The worker's words, without the processor's error it quoted (kept on `cause`).
        message: new JobDeadlineExceededError({ ...details, cause: undefined }).message,
        cause: seen,
        ...expected,
      })
    }
  })

  it("keeps the processor's error out of its message (a gRPC deadlineErrors() sends it as details), on cause only", () => {
    const seen = asSeenByProducer({
      stage: 'running',
      jobId: '5',
      queue: 'reports',
      budgetMs: 100,
      elapsedMs: 100,
      cause: new Error('GET http://10.0.0.7/internal/billing?token=abc: socket hang up'),
    })
    const read = fromJobError(seen) as JobDeadlineExceededError
    expect(read.message).toBe(
      'deadline_exceeded: job 5 of reports was stopped by its deadline (added with 100 ms left)',
    )
    expect((read.cause as Error).message).toContain('token=abc')
  })

  it('a number the reason does not state is NaN, not a made-up 0', () => {
    const read = fromJobError(
      asSeenByProducer({
        stage: 'retry',
        jobId: '1',
        queue: 'q',
        budgetMs: 80,
        elapsedMs: 60,
        budgetRecorded: false,
      }),
    ) as JobDeadlineExceededError
    expect(read.stage).toBe('retry')
    expect(read.budgetMs).toBeNaN()
    expect(read.elapsedMs).toBeNaN()
  })

  it('returns anything else as it is: other failures, look-alikes, deadline errors, non-errors', () => {
    const deadline = new DeadlineExceededError({ budgetMs: 1, elapsedMs: 2 })
    const others: unknown[] = [
      new Error('boom'),
      new Error('deadline exceeded: 3 ms elapsed of a 2 ms budget'), // core's wording, not a job's
      new Error('deadline_exceeded: somebody else’s words'),
      new Error(
        'deadline_exceeded: job 1 of a:b was stopped by its deadline (added with 5 ms left)',
      ),
      // Hostile: long, and full of places a form could begin (read in linear time, then refused).
      new Error(`deadline_exceeded: job ${' of x was stopped by its deadline ('.repeat(1500)}`),
      new Error(`deadline_exceeded: job ${'a of b '.repeat(8_500)}`),
      deadline,
      'deadline_exceeded: job 1 of q was stopped by its deadline (added with 5 ms left)',
      undefined,
      null,
    ]
    for (const other of others) expect(fromJobError(other)).toBe(other)
  })
})

describe.skipIf(!available)('fromJobError: through a real queue and an Express handler', () => {
  const redis = useRedisQueues()

  it('a handler awaiting a job that ran out of its deadline answers 504 through deadlineErrors(), not 500', async () => {
    const { queue, events, name } = await redis.queue()
    const deadline = Deadline.after(100, { clock: new ManualClock() })
    const job = await addWithDeadline(queue, 'late', { n: 1 }, { deadline })
    await redisClockPasses(redis.client(), storedExpiry(job))
    redis.worker(
      name,
      withDeadline(async () => 'done'),
    )

    const app = express()
    const seen: unknown[] = []
    app.get('/report', async (_req, res, next) => {
      try {
        res.json(await job.waitUntilFinished(events))
      } catch (error) {
        seen.push(fromJobError(error))
        next(fromJobError(error))
      }
    })
    app.use(deadlineErrors())
    const server = app.listen(0, '127.0.0.1')
    await once(server, 'listening')
    try {
      const { port } = server.address() as AddressInfo
      const res = await fetch(`http://127.0.0.1:${port}/report`)
      expect(res.status).toBe(504)
      expect(await res.json()).toMatchObject({ budgetMs: 100 })
      expect(seen[0]).toMatchObject({ stage: 'queued', jobId: job.id, queue: name, budgetMs: 100 })
    } finally {
      server.close()
      server.closeAllConnections()
    }
  })
})

describe("whose expiry a job's deadline error is", () => {
  const seen = () =>
    asSeenByProducer({ stage: 'running', jobId: '7', queue: 'q', budgetMs: 900, elapsedMs: 900 })

  it("the request's, when the request has at most MAX_RESERVE_MS left: a job on the request's deadline stops at its copy of it, a Redis round trip early", () => {
    const clock = new ManualClock()
    const request = Deadline.after(1000, { clock })
    clock.advance(1000 - MAX_RESERVE_MS)
    expect(isExpiryOf(fromJobError(seen(), { deadline: request }), request)).toBe(true)
    request.dispose()
  })

  it('an unrelated deadline’s, while the request has more than that left (a cap of the job’s own)', () => {
    const clock = new ManualClock()
    const request = Deadline.after(1000, { clock })
    clock.advance(1000 - MAX_RESERVE_MS - 1)
    expect(isExpiryOf(fromJobError(seen(), { deadline: request }), request)).toBe(false)
    request.dispose()
  })

  it("the request's, once its deadline has ended", () => {
    const clock = new ManualClock()
    const request = Deadline.after(1000, { clock })
    clock.advance(1000)
    expect(isExpiryOf(fromJobError(seen(), { deadline: request }), request)).toBe(true)
  })
})
