import { ManualClock } from '@hourglass/core'
import type { RequestHandler } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, expressChannels, type IngressEndMessage } from '../src/index.js'
import { deferred, listen, majors, type Running, record } from './support/servers.js'

/**
 * An instrumentation that pins `res.end` (defined, not writable) so nothing
 * replaces its wrapper. Watching respond's `end` assigned the property: that
 * threw in the deadline's expiry, before `respond` ran, and the request got
 * no answer at all. The watch is skipped where `end` cannot be replaced.
 */
function pinsEnd(): RequestHandler {
  return (_req, res, next) => {
    const end = res.end
    Object.defineProperty(res, 'end', {
      value: function pinnedEnd(this: typeof res, ...args: unknown[]) {
        return (end as (...a: unknown[]) => unknown).apply(this, args)
      },
      writable: false,
      configurable: true,
    })
    next()
  }
}

/** Pinned for good: not even `defineProperty` can replace it. */
function freezesEnd(): RequestHandler {
  return (_req, res, next) => {
    Object.defineProperty(res, 'end', { value: res.end, writable: false, configurable: false })
    next()
  }
}

describe.each(majors)('respond where res.end is pinned ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it.each([
    ['not writable', pinsEnd()],
    ['not configurable either', freezesEnd()],
  ])('answers with respond’s body (end %s)', async (_how, middleware) => {
    const ended = record<IngressEndMessage>(expressChannels.end.name)
    try {
      const clock = new ManualClock()
      const entered = deferred()
      const app = major.app()
      app.use(
        deadline({
          defaultMs: 1000,
          reserveMs: 10,
          clock,
          respond: (_req, res) => {
            res.status(504).json({ error: { code: 'deadline_exceeded' } })
          },
        }),
      )
      app.use(middleware)
      app.get('/', () => entered.resolve())
      server = await listen(app)
      const answer = request(server.url)
      await entered.promise
      let thrown: unknown
      try {
        clock.advance(990)
      } catch (error) {
        thrown = error
      }
      expect(thrown).toBeUndefined()
      const res = await answer
      expect(res.statusCode).toBe(504)
      expect(await res.body.json()).toEqual({ error: { code: 'deadline_exceeded' } })
      await ended.count(1)
      expect(ended.messages.map((m) => m.outcome)).toEqual(['expired'])
    } finally {
      ended.stop()
    }
  })
})
