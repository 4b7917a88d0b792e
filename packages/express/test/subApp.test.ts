import { ManualClock } from '@hourglass/core'
import type { ErrorRequestHandler } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { client, deferred, listen, majors, type Running } from './support/servers.js'

/**
 * A sub-app (`app.use('/v1', express())`) entered after the deadline
 * answered: Express sets the response's prototype to the sub-app's on the
 * way in, and back to the app's on the way out. The late writes must stay
 * swallowed through both.
 */
describe.each(majors)('a sub-app entered after the 504 ($name)', (major) => {
  let server: Running | undefined
  const agent = client({ connections: 1 })
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('writes nothing and throws nothing, in the sub-app and after leaving it; the connection serves the next request', async () => {
    const clock = new ManualClock()
    const app = major.app()
    const late: string[] = []
    const passedOn: unknown[] = []
    const done = deferred<{ chained: boolean }>()
    app.use(deadline({ clock, reserveMs: 0, onLateWrite: (event) => late.push(event.method) }))
    // A slow auth check: the deadline runs out (504) before it lets the request on.
    app.use((req, _res, next) => {
      if (req.path.startsWith('/v1')) clock.advance(1000)
      next()
    })
    const thrown: unknown[] = []
    const v1 = major.app()
    v1.get('/thing', (_req, res, next) => {
      try {
        res.status(200).json({ from: 'sub-app' })
      } catch (error) {
        thrown.push(error)
      }
      next() // on to the parent's next route, out of the sub-app
    })
    app.use('/v1', v1)
    app.get('/v1/thing', (_req, res) => {
      let chained = false
      try {
        chained = res.status(201).set('x-after', '1').send('after the sub-app') === res
      } catch (error) {
        thrown.push(error)
      }
      done.resolve({ chained })
    })
    app.get('/next', (_req, res) => {
      res.json({ next: true })
    })
    app.use(deadlineErrors())
    const userHandler: ErrorRequestHandler = (error, _req, res, _next) => {
      passedOn.push(error)
      res.status(500).end()
    }
    app.use(userHandler)
    server = await listen(app)

    const answer = await request(`${server.url}/v1/thing`, {
      headers: { 'x-deadline-remaining-ms': '1000' },
      dispatcher: agent,
    })
    expect(answer.statusCode).toBe(504)
    expect(await answer.body.json()).toMatchObject({ error: 'deadline_exceeded' })
    const { chained } = await done.promise
    expect(thrown).toEqual([])
    expect(passedOn).toEqual([])
    expect(chained).toBe(true)
    // Only the route's calls: the X-Powered-By Express sets on entering the
    // sub-app is routing, not a late write (see subAppPoweredBy.test.ts).
    expect(late).toEqual(['status', 'json', 'status', 'set', 'send'])

    const next = await request(`${server.url}/next`, { dispatcher: agent })
    expect(next.statusCode).toBe(200)
    expect(await next.body.json()).toEqual({ next: true })
    expect(server.connections).toHaveLength(1)
  })
})
