import { DeadlineExceededError, ManualClock } from '@hourglass/core'
import type { ErrorRequestHandler } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { client, listen, majors, type Running } from './support/servers.js'

// An app with two installed copies of @hourglass/core: this package's, and
// the one a client library depends on (@hourglass/grpc, @hourglass/bullmq on
// another version). The client marks a remote's own cap, under a request
// with most of its time left, as an expiry from elsewhere
// (`markForeignExpiry`): an error of the app's to answer. deadlineErrors()
// read it with its own copy's marks, found none, took it for the request's
// expiry and answered 504 `x-deadline-expired: 1` (do not retry) at once.
const other = (await import(
  // @ts-expect-error -- a query the module resolver does not type
  '../../core/src/Deadline.ts?foreign-expiry-other-core'
)) as typeof import('../../core/src/Deadline.js')

describe.each(majors)('a foreign expiry marked by another copy of core ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it("is passed on to the app's error handler, not answered as the request's expiry", async () => {
    const app = major.app()
    // Never advanced: the request's own time never runs out.
    app.use(deadline({ clock: new ManualClock(), defaultMs: 1000, reserveMs: 0 }))
    app.get(
      '/',
      major.route(async () => {
        throw other.markForeignExpiry(new DeadlineExceededError({ budgetMs: 50, elapsedMs: 50 }))
      }),
    )
    app.use(deadlineErrors())
    const upstreamTimeout: ErrorRequestHandler = (error, _req, res, _next) => {
      res.status(502).json({ error: 'upstream_timeout', code: (error as { code?: unknown }).code })
    }
    app.use(upstreamTimeout)
    server = await listen(app)
    const res = await request(server.url, { dispatcher: client() })
    expect(res.statusCode).toBe(502)
    expect(res.headers['x-deadline-expired']).toBeUndefined()
    expect(await res.body.json()).toEqual({ error: 'upstream_timeout', code: 'DEADLINE_EXCEEDED' })
  })
})
