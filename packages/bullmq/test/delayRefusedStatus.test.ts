import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { ManualClock } from '@hourglass/core'
import { deadline, deadlineErrors } from '@hourglass/express'
import express from 'express'
import express4 from 'express4'
import { describe, expect, it, onTestFinished } from 'vitest'
import { addWithDeadline } from '../src/index.js'
import { available, useRedisQueues } from './support/redisQueues.js'

// The README: a delay that does not fit the request's deadline, with most of
// its time left, is marked as an unrelated deadline's "so an Express
// handler's next(error) reaches the app's error handler (a 500, a bug to
// fix)". But a DeadlineExceededError says 504 on its prototype: Express's
// own final handler (and an app's `err.status ?? 500`) answered
// `504 Gateway Timeout` 3 ms into a 2 s request, for a schedule bug.
describe.skipIf(!available).each([
  { name: 'express 5', app: () => express() },
  { name: 'express 4', app: () => express4() },
])('a refused delay reaching Express’s own error handler ($name)', ({ app: makeApp }) => {
  const redis = useRedisQueues()

  it('is a 500, not a 504 Gateway Timeout, while the request has its time', async () => {
    const { queue } = await redis.queue()
    const app = makeApp()
    app.use(deadline({ defaultMs: 2000, clock: new ManualClock() }))
    app.post('/remind', (_req, res, next) => {
      addWithDeadline(queue, 'remind', {}, { delay: 5000 }).then(
        (job) => res.json({ id: job.id }),
        next,
      )
    })
    app.use(deadlineErrors())
    // No error handler of the app's: Express's final handler answers.
    app.set('env', 'production')
    const server = app.listen(0, '127.0.0.1')
    await once(server, 'listening')
    onTestFinished(() => {
      server.close()
      server.closeAllConnections()
    })
    const { port } = server.address() as AddressInfo
    const res = await fetch(`http://127.0.0.1:${port}/remind`, {
      method: 'POST',
      headers: { 'x-deadline-remaining-ms': '2000' },
    })
    await res.text()
    expect(res.status).toBe(500)
    expect(res.headers.get('x-deadline-expired')).toBeNull()
    expect(await queue.count()).toBe(0)
  })
})
