import { DeadlineExceededError, ManualClock } from '@hourglass/core'
import type { Express, RequestHandler, Response } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { deadline, deadlineErrors, expressChannels, type IngressEndMessage } from '../src/index.js'
import { RESPOND_END_GRACE_MS } from '../src/watchEnd.js'
import { deferredEnd } from './support/deferredEnd.js'
import { deferred, listen, majors, type Running, record } from './support/servers.js'

/**
 * The plain 504 (no `respond`) written through a middleware whose `end`
 * completes later and here never does: express-session saving a new
 * session (`saveUninitialized`, its default) to a store that never calls
 * back, a Redis client queueing commands while the server is down. The 504
 * went out all but its last byte and was held for good: the caller read a
 * 504 whose body never ended, the socket stayed open, and the request never
 * ended (no end event, its span never closed). `respond`'s answer was
 * already bounded (`test/respondEndNeverCompletes.test.ts`); the plain one
 * now is too: destroyed `RESPOND_END_GRACE_MS` after it was written, the
 * request ending `expired`. An end that completes within the grace is kept.
 * So are `deadlineErrors()`'s own 504 and `strict`'s 400.
 */
describe.each(majors)('the plain 504 behind an end that never completes ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    vi.useRealTimers()
    await server?.close()
    server = undefined
  })

  async function serve(app: Express) {
    server = await listen(app)
    return request(server.url)
  }

  it.each([
    ['mounted ahead of deadline()', true],
    ['mounted after deadline()', false],
  ])('%s: destroyed a grace after the 504, the request ends expired', async (_name, ahead) => {
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const clock = new ManualClock()
      const handled = deferred<Response>()
      const app = major.app()
      if (ahead) app.use(deferredEnd('never'))
      app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock }))
      if (!ahead) app.use(deferredEnd('never'))
      app.get('/', (_req, res) => handled.resolve(res))
      const answer = serve(app)
      const res = await handled.promise
      clock.advance(990)
      const reply = await answer
      expect(reply.statusCode).toBe(504)
      const body = reply.body.text().catch((error: unknown) => error)
      clock.advance(RESPOND_END_GRACE_MS - 1)
      expect(res.destroyed).toBe(false)
      clock.advance(1)
      // Before, nothing destroyed it: held for good, no end event.
      expect(res.destroyed).toBe(true)
      await ended.count(1)
      expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([['expired', 504]])
      expect(await body).toBeInstanceOf(Error)
      expect(clock.pendingTimers).toBe(0)
    } finally {
      ended.stop()
    }
  })

  it('keeps an end that completes within the grace, and leaves no timer behind', async () => {
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const clock = new ManualClock()
      const handled = deferred<Response>()
      const app = major.app()
      app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock }))
      app.use(deferredEnd('answers'))
      app.get('/', (_req, res) => handled.resolve(res))
      const answer = serve(app)
      await handled.promise
      clock.advance(990)
      const reply = await answer
      expect(JSON.parse(await reply.body.text())).toMatchObject({ error: 'deadline_exceeded' })
      await ended.count(1)
      expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([['expired', 504]])
      expect(clock.pendingTimers).toBe(0)
    } finally {
      ended.stop()
    }
  })

  it('deadlineErrors() without deadline(): its 504 is destroyed a grace later too', async () => {
    // Only the grace's timer (a system one: no deadline clock without deadline()).
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const handled = deferred<Response>()
    const app = major.app()
    app.use(deferredEnd('never') as RequestHandler)
    app.get('/', (_req, res, next) => {
      handled.resolve(res)
      next(new DeadlineExceededError({ budgetMs: 100, elapsedMs: 100, slice: 'lookup' }))
    })
    app.use(deadlineErrors())
    const reply = await serve(app)
    expect(reply.statusCode).toBe(504)
    const res = await handled.promise
    const body = reply.body.text().catch((error: unknown) => error)
    vi.advanceTimersByTime(RESPOND_END_GRACE_MS - 1)
    expect(res.destroyed).toBe(false)
    vi.advanceTimersByTime(1)
    expect(res.destroyed).toBe(true)
    expect(await body).toBeInstanceOf(Error)
  })

  it("strict's 400 for a malformed header is destroyed a grace later too", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const given = deferred<Response>()
      const app = major.app()
      app.use((_req, res, next) => {
        given.resolve(res)
        next()
      })
      app.use(deferredEnd('never'))
      app.use(deadline({ strict: true, clock: new ManualClock() }))
      app.get('/', (_req, res) => {
        res.send('never run')
      })
      server = await listen(app)
      const reply = await request(server.url, { headers: { 'x-deadline-remaining-ms': 'soon' } })
      expect(reply.statusCode).toBe(400)
      const res = await given.promise
      const body = reply.body.text().catch((error: unknown) => error)
      vi.advanceTimersByTime(RESPOND_END_GRACE_MS - 1)
      expect(res.destroyed).toBe(false)
      vi.advanceTimersByTime(1)
      expect(res.destroyed).toBe(true)
      expect(await body).toBeInstanceOf(Error)
      expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([['refused', 400]])
    } finally {
      ended.stop()
    }
  })
})
