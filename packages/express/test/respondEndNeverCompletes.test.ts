import { ManualClock } from '@hourglass/core'
import type { RequestHandler, Response } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type DeadlineMiddlewareOptions,
  deadline,
  expressChannels,
  type IngressEndMessage,
} from '../src/index.js'
import { RESPOND_END_GRACE_MS } from '../src/watchEnd.js'
import { deferredEnd } from './support/deferredEnd.js'
import { deferred, listen, majors, type Running, record } from './support/servers.js'

const respond: NonNullable<DeadlineMiddlewareOptions['respond']> = (_req, res) => {
  res.status(504).send('{"error":"deadline_exceeded"}')
}

/**
 * A middleware whose deferred end never completes (express-session whose
 * store never calls back): `respond` called `end`, so its answer is taken
 * as given — but not for ever: a response still unfinished
 * `RESPOND_END_GRACE_MS` after `respond` returned is destroyed, and the
 * request ends `expired`. Without the bound the socket and the buffered
 * answer were held for good, and no end event was published.
 */
describe.each(majors)('respond behind an end that never completes ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  async function serve(middleware: RequestHandler) {
    const clock = new ManualClock()
    const handled = deferred<Response>()
    const app = major.app()
    app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock, respond }))
    app.use(middleware)
    app.get('/', (_req, res) => handled.resolve(res))
    server = await listen(app)
    const answer = request(server.url)
    const res = await handled.promise
    return { clock, answer, res }
  }

  it('is destroyed a grace after respond returned, and the request ends expired', async () => {
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const { clock, answer, res } = await serve(deferredEnd('never'))
      clock.advance(990)
      const reply = await answer
      expect(reply.statusCode).toBe(504)
      const body = reply.body.text().catch((error: unknown) => error)
      clock.advance(RESPOND_END_GRACE_MS - 1)
      expect(res.destroyed).toBe(false)
      clock.advance(1)
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
      const { clock, answer } = await serve(deferredEnd('answers'))
      clock.advance(990)
      const reply = await answer
      expect(await reply.body.text()).toBe('{"error":"deadline_exceeded"}')
      await ended.count(1)
      expect(ended.messages.map((m) => [m.outcome, m.statusCode])).toEqual([['expired', 504]])
      expect(clock.pendingTimers).toBe(0)
    } finally {
      ended.stop()
    }
  })
})
