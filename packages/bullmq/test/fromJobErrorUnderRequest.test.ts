import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { currentDeadline, Deadline, isExpiryOf, ManualClock, untilEnded } from '@hourglass/core'
import { deadline, deadlineErrors, expressChannels } from '@hourglass/express'
import express, { type NextFunction, type Request, type Response } from 'express'
import { describe, expect, it, onTestFinished } from 'vitest'
import {
  addWithDeadline,
  fromJobError,
  isJobDeadlineExceeded,
  JobDeadlineExceededError,
  withDeadline,
} from '../src/index.js'
import { collect } from './support/observe.js'
import { available, redisClockPasses, storedExpiry, useRedisQueues } from './support/redisQueues.js'

const retryRefused = () =>
  new Error(
    new JobDeadlineExceededError({
      stage: 'retry',
      jobId: '7',
      queue: 'reports',
      budgetMs: 3000,
      elapsedMs: 20,
      retryDelayMs: 5000,
    }).message,
  )

describe('fromJobError: whose expiry it is', () => {
  it("while the caller's deadline has its time, it is an unrelated deadline's, saying what the job had", () => {
    const clock = new ManualClock()
    const request = Deadline.after(3000, { clock })
    const error = fromJobError(retryRefused(), { deadline: request })
    expect(isJobDeadlineExceeded(error)).toBe(true)
    expect(isExpiryOf(error, request)).toBe(false)
    expect(error).toMatchObject({ stage: 'retry', budgetMs: 3000, elapsedMs: 20 })
  })

  it("once the caller's deadline has ended, it is that deadline's expiry", () => {
    const clock = new ManualClock()
    const request = Deadline.after(3000, { clock })
    clock.advance(3000)
    expect(isExpiryOf(fromJobError(retryRefused(), { deadline: request }), request)).toBe(true)
    const cancelled = Deadline.after(3000, { clock })
    cancelled.cancel(new Error('gone'))
    expect(isExpiryOf(fromJobError(retryRefused(), { deadline: cancelled }), cancelled)).toBe(true)
  })

  it('reads the current deadline when none is given', async () => {
    const request = Deadline.after(60_000)
    onTestFinished(() => request.dispose())
    const { runWithDeadline } = await import('@hourglass/core')
    const error = runWithDeadline(request, () => fromJobError(retryRefused()))
    expect(isExpiryOf(error, request)).toBe(false)
  })
})

describe.skipIf(!available)(
  'fromJobError: a job that ran out inside a request with time left',
  () => {
    const redis = useRedisQueues()

    /** An Express app with deadline() and deadlineErrors(); what reached the app's own error handler. */
    async function serve(
      handler: (req: Request, res: Response, next: NextFunction) => Promise<void>,
      options: Parameters<typeof deadline>[0],
    ) {
      const passedOn: unknown[] = []
      const expired = collect(expressChannels.expire)
      const app = express()
      app.use(deadline(options))
      app.get('/', handler)
      app.use(deadlineErrors())
      app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
        passedOn.push(error)
        res.status(502).json({ passedOn: true })
      })
      const server = app.listen(0, '127.0.0.1')
      await once(server, 'listening')
      onTestFinished(() => {
        server.close()
        server.closeAllConnections()
      })
      const { port } = server.address() as AddressInfo
      return { url: `http://127.0.0.1:${port}/`, passedOn, expired }
    }

    it("a retry refused for its back-off (stage retry) is passed on, not the request's 504", async () => {
      const { queue, events, name } = await redis.queue()
      redis.worker(
        name,
        withDeadline(async () => {
          throw new Error('upstream 503')
        }),
      )
      const { url, passedOn, expired } = await serve(
        async (_req, res, next) => {
          const job = await addWithDeadline(
            queue,
            'j',
            {},
            {
              attempts: 3,
              backoff: { type: 'fixed', delay: 600_000 },
            },
          )
          try {
            res.json(
              await untilEnded(job.waitUntilFinished(events), { deadline: currentDeadline() }),
            )
          } catch (error) {
            next(fromJobError(error))
          }
        },
        { defaultMs: 60_000 },
      )
      const res = await fetch(url)
      expect(res.status).toBe(502)
      expect(res.headers.get('x-deadline-expired')).toBeNull()
      expect(expired).toHaveLength(0)
      expect(passedOn).toHaveLength(1)
      expect(isJobDeadlineExceeded(passedOn[0])).toBe(true)
      expect(passedOn[0]).toMatchObject({ stage: 'retry' })
    })

    it("a job's cap of its own is passed on, not the request's 504", async () => {
      const { queue, events, name } = await redis.queue()
      // A 100 ms cap of the job's own (on a ManualClock where it is added, so
      // exactly 100 ms is stored), let pass before a worker takes it.
      const job = await addWithDeadline(
        queue,
        'j',
        {},
        {
          deadline: Deadline.after(100, { clock: new ManualClock() }),
        },
      )
      await redisClockPasses(redis.client(), storedExpiry(job))
      redis.worker(
        name,
        withDeadline(async () => 'done'),
      )
      const { url, passedOn, expired } = await serve(
        async (_req, res, next) => {
          try {
            res.json(
              await untilEnded(job.waitUntilFinished(events), { deadline: currentDeadline() }),
            )
          } catch (error) {
            next(fromJobError(error))
          }
        },
        { defaultMs: 60_000 },
      )
      const res = await fetch(url)
      expect(res.status).toBe(502)
      expect(res.headers.get('x-deadline-expired')).toBeNull()
      expect(expired).toHaveLength(0)
      expect(isJobDeadlineExceeded(passedOn[0])).toBe(true)
      expect(passedOn[0]).toMatchObject({ stage: 'queued', budgetMs: 100 })
    })

    it("when the request's deadline has really ended, it is still the request's 504", async () => {
      const { queue, events, name } = await redis.queue()
      redis.worker(
        name,
        withDeadline(async () => {
          throw new Error('upstream 503')
        }),
      )
      const clock = new ManualClock()
      const { url, passedOn, expired } = await serve(
        async (_req, res, next) => {
          // The request's deadline (on the ManualClock) is the job's: its retry does not fit.
          const job = await addWithDeadline(
            queue,
            'j',
            {},
            {
              attempts: 3,
              backoff: { type: 'fixed', delay: 600_000 },
            },
          )
          try {
            res.json(await job.waitUntilFinished(events))
          } catch (error) {
            // The job's news arrives as the request's time runs out: told after it.
            const made = fromJobError(error)
            clock.advance(1000)
            next(made)
          }
        },
        { defaultMs: 1000, clock },
      )
      // The caller's own budget (a header): only its end says x-deadline-expired.
      const res = await fetch(url, { headers: { 'x-deadline-remaining-ms': '1000' } })
      expect(res.status).toBe(504)
      expect(res.headers.get('x-deadline-expired')).toBe('1')
      expect(expired).toHaveLength(1)
      expect(passedOn).toHaveLength(0)
    })
  },
)
