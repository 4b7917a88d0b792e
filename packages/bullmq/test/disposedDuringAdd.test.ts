import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { currentDeadline, Deadline } from '@hourglass/core'
import { deadline } from '@hourglass/express'
import express from 'express'
import { describe, expect, it, onTestFinished } from 'vitest'
import { addWithDeadline, bullmqChannels, withDeadline } from '../src/index.js'
import { collect, finished } from './support/observe.js'
import { available, redisNowMs, useRedisQueues } from './support/redisQueues.js'

// A deadline disposed while live reads as one that never expires (core: the
// request is over). One disposed while addWithDeadline waited for the Redis
// clock — the usual fire-and-forget, `addWithDeadline(…)` not awaited and
// `res.status(202).end()`, the response finishing before TIME's reply — was
// read after the reading: Infinity left, cut to maxMs, and an expiry of
// Infinity − Infinity. The job was stored with `expiresAtMs: NaN` (JSON's
// `null`) and a day's budget: every worker reported it on `invalid` as
// corrupt data and ran it with no deadline at all. The job takes the
// deadline it was added under, read when the add was asked.

describe.skipIf(!available)('a deadline disposed while the job is being added', () => {
  const redis = useRedisQueues()

  /** What the job stored in Redis: its `hourglass` option. */
  async function storedOf(queue: { getJob(id: string): Promise<unknown> }, id: string) {
    const job = (await queue.getJob(id)) as { opts: { hourglass?: Record<string, unknown> } }
    return job.opts.hourglass
  }

  it('keeps the expiry it was asked with, not none and not a NaN', async () => {
    const { queue } = await redis.queue()
    const client = redis.client()
    const d = Deadline.after(5_000)
    const adding = addWithDeadline(queue, 'receipt', {}, { deadline: d })
    // While the clock reading is on its way (its reply cannot come before this runs).
    d.dispose()
    const job = await adding
    const redisNow = await redisNowMs(client)
    const stored = await storedOf(queue, job.id!)
    expect(stored?.budgetMs).toBeLessThanOrEqual(5_000)
    expect(Number.isFinite(stored?.expiresAtMs)).toBe(true)
    expect(stored?.expiresAtMs as number).toBeLessThanOrEqual(redisNow + 5_000)
  })

  it('a job enqueued fire-and-forget from an Express handler that answers first is bounded by the request’s deadline', async () => {
    const { queue, events, name } = await redis.queue()
    const client = redis.client()
    const invalid = collect(bullmqChannels.invalid)
    let requestDeadline: Deadline | undefined
    let adding: Promise<{ id?: string | undefined }> | undefined
    const app = express()
    app.use(deadline({ defaultMs: 5_000 }))
    app.post('/orders', (_req, res) => {
      requestDeadline = currentDeadline()
      adding = addWithDeadline(queue, 'receipt', {})
      adding.catch(() => {})
      res.status(202).end()
    })
    const server = app.listen(0, '127.0.0.1')
    await once(server, 'listening')
    onTestFinished(() => {
      server.close()
      server.closeAllConnections()
    })
    const { port } = server.address() as AddressInfo
    // Redis holds its reply until the response is over and the request's deadline released.
    redis.redis.freeze()
    const res = await fetch(`http://127.0.0.1:${port}/orders`, { method: 'POST' })
    expect(res.status).toBe(202)
    await expect.poll(() => requestDeadline?.expiresAt).toBe(Number.POSITIVE_INFINITY)
    redis.redis.thaw()
    const job = await adding!
    const redisNow = await redisNowMs(client)
    const stored = await storedOf(queue, job.id!)
    expect(stored?.budgetMs).toBeLessThanOrEqual(5_000)
    expect(stored?.expiresAtMs as number).toBeLessThanOrEqual(redisNow + 5_000)
    // A worker runs it under that deadline, not as corrupt data with none.
    let had: number | undefined
    redis.worker(
      name,
      withDeadline(async () => {
        had = currentDeadline()?.remaining()
      }),
    )
    expect(await finished(job as Parameters<typeof finished>[0], events, queue)).toMatchObject({
      state: 'completed',
    })
    expect(had).toBeLessThanOrEqual(5_000)
    expect(invalid).toHaveLength(0)
  })
})
