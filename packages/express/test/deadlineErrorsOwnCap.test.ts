import { Deadline, DeadlineExceededError, guard } from '@hourglass/core'
import type { ErrorRequestHandler } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { client, listen, majors, type Running, record } from './support/servers.js'

/**
 * deadlineErrors() answered any DeadlineExceededError as the request's
 * expiry: a `Deadline.after(20)` cap of the app's own inside a step, not
 * handled, became a 504 with `x-deadline-expired: 1` and an expire event
 * with most of the request's 2 s left. Such an error is the app's: passed
 * on, as every other error of the app's.
 */
describe.each(majors)('deadlineErrors() and a deadline error of the app’s own ($name)', (major) => {
  let server: Running | undefined
  const agent = client({ connections: 1 })
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('passes on the error of a cap of its own: no 504, no x-deadline-expired, no expire event', async () => {
    const expires = record<unknown>('hourglass:ingress:expire')
    try {
      const app = major.app()
      const passedOn: unknown[] = []
      app.use(deadline({ defaultMs: 2000, plan: { cache: 0.1, model: 0.9 } }))
      app.get(
        '/',
        major.route(async (req, res) => {
          const value = await req.plan?.run('model', () =>
            // A 20 ms cap of its own on a lookup that hangs.
            guard(new Promise(() => {}), { deadline: Deadline.after(20) }),
          )
          res.json(value)
        }),
      )
      app.use(deadlineErrors())
      app.use(((error, _req, res, _next) => {
        passedOn.push(error)
        res.status(500).json({ error: 'internal' })
      }) as ErrorRequestHandler)
      server = await listen(app)
      const res = await request(server.url, { dispatcher: agent })
      await res.body.dump()
      expect(res.statusCode).toBe(500)
      expect(res.headers['x-deadline-expired']).toBeUndefined()
      expect(passedOn).toHaveLength(1)
      expect(expires.messages).toEqual([])
    } finally {
      expires.stop()
    }
  })

  it('answers one the app made itself (a downstream 504 rethrown) as the request’s expiry, as before', async () => {
    // The examples' pattern: a hop that got a 504 from the next one throws a
    // DeadlineExceededError of its own naming the slice; it is of no known
    // deadline, so the request's line's (a 500 turned every such 504 of the
    // demo into an HTML error page).
    const app = major.app()
    app.use(deadline({ defaultMs: 2000 }))
    app.get(
      '/',
      major.route(async () => {
        throw new DeadlineExceededError({ budgetMs: 2000, elapsedMs: 1990, slice: 'api' })
      }),
    )
    app.use(deadlineErrors())
    server = await listen(app)
    // The caller's budget: under the server's own defaultMs the 504 would
    // not say the caller's is gone (ownCapNotCallers.test.ts).
    const res = await request(server.url, {
      dispatcher: agent,
      headers: { 'x-deadline-remaining-ms': '2000' },
    })
    const body = (await res.body.json()) as { slice?: string }
    expect(res.statusCode).toBe(504)
    expect(res.headers['x-deadline-expired']).toBe('1')
    expect(body.slice).toBe('api')
  })
})
