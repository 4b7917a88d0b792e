import { DeadlineExceededError, markForeignExpiry } from '@hourglass/core'
import type { ErrorRequestHandler } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadlineErrors } from '../src/index.js'
import { client, listen, majors, type Running } from './support/servers.js'

// deadlineErrors() without deadline() in the chain answers every
// DeadlineExceededError as the request's expiry: it has no line to tell
// them apart by. One marked as the expiry of a deadline from elsewhere (a
// remote's own cap behind a gRPC call, a job's cap: `markForeignExpiry`)
// is told by its mark alone, and core promises it is never answered as a
// request's expiry. It was: 504 `x-deadline-expired: 1` (do not retry).
describe.each(majors)('deadlineErrors() without deadline() ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('passes an expiry marked as from elsewhere on to the app, and still answers an unmarked one 504', async () => {
    const app = major.app()
    app.get(
      '/remote-cap',
      major.route(async () => {
        throw markForeignExpiry(new DeadlineExceededError({ budgetMs: 50, elapsedMs: 50 }))
      }),
    )
    app.get(
      '/spent',
      major.route(async () => {
        throw new DeadlineExceededError({ budgetMs: 50, elapsedMs: 50 })
      }),
    )
    app.use(deadlineErrors())
    const upstreamTimeout: ErrorRequestHandler = (_error, _req, res, _next) => {
      res.status(502).json({ error: 'upstream_timeout' })
    }
    app.use(upstreamTimeout)
    server = await listen(app)
    const remote = await request(`${server.url}/remote-cap`, { dispatcher: client() })
    expect(remote.statusCode).toBe(502)
    expect(remote.headers['x-deadline-expired']).toBeUndefined()
    expect(await remote.body.json()).toEqual({ error: 'upstream_timeout' })
    const spent = await request(`${server.url}/spent`, { dispatcher: client() })
    expect(spent.statusCode).toBe(504)
    expect(spent.headers['x-deadline-expired']).toBe('1')
    await spent.body.dump()
  })
})
