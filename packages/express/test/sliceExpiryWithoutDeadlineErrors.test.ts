import { ManualClock } from '@hourglass/core'
import type { ErrorRequestHandler, Express } from 'express'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { deadline } from '../src/index.js'
import { useServer } from './support/oneServer.js'
import { deferred, majors } from './support/servers.js'

/**
 * `deadline()` without `deadlineErrors()` (the quick start read halfway, or
 * an error handler of the app's own): a slice that runs out before the
 * request does (its own `{ ms }`) rejects the handler's `plan.run` with a
 * `DeadlineExceededError`, and nothing answers it but the app's handler or
 * Express's. Both read the status off the error (`err.status`, then
 * `err.statusCode`, as for http-errors' errors): it carried none, and the
 * caller got a 500 — an HTML page with the stack outside production — for
 * a timeout. The error says 504 itself now.
 */
describe.each(majors)('a slice’s expiry without deadlineErrors() ($name)', (major) => {
  const served = useServer()
  afterEach(() => {
    vi.unstubAllEnvs()
  })

  /** GET / whose `model` slice (100 ms of a 1000 ms request) runs out while its step hangs. */
  async function sliceRunsOut(app: Express, errorHandler?: ErrorRequestHandler) {
    const clock = new ManualClock()
    const inSlice = deferred()
    app.use(
      deadline({ clock, defaultMs: 1000, reserveMs: 10, plan: { model: { ms: 100 }, rest: 1 } }),
    )
    app.get(
      '/',
      major.route(async (req, res) => {
        const answer = await req.plan!.run('model', () => {
          inSlice.resolve()
          return new Promise<never>(() => {})
        })
        res.json({ answer })
      }),
    )
    if (errorHandler) app.use(errorHandler)
    const { pending } = await served.send(app)
    await inSlice.promise
    clock.advance(100) // the slice's own limit; the request has 890 ms left
    const res = await pending
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
  }

  it('Express’s own final handler answers 504, its status message and no stack in production', async () => {
    // Express reads NODE_ENV once, when the app is made (its `env` setting,
    // which it hands the final handler): stubbed before `app()`, not after.
    vi.stubEnv('NODE_ENV', 'production')
    // Outside `test` Express logs the error it answers for, once the answer
    // is sent (finalhandler's `onerror`, on a later turn): kept off the
    // output, and waited for.
    const logged = deferred<unknown>()
    vi.spyOn(console, 'error').mockImplementation((error: unknown) => logged.resolve(error))
    const app = major.app()
    expect(app.get('env')).toBe('production')
    const got = await sliceRunsOut(app)
    expect(got.status).toBe(504)
    expect(got.body).toContain('Gateway Timeout')
    expect(got.body).not.toContain('DeadlineExceededError')
    expect(got.body).not.toContain('deadline exceeded')
    expect(got.body).not.toMatch(/\bat .*\.ts:\d+/)
    expect(String(await logged.promise)).toContain('deadline exceeded in slice "model"')
  })

  it('an error handler that answers `err.status ?? err.statusCode ?? 500` answers 504', async () => {
    const seen: unknown[] = []
    const got = await sliceRunsOut(major.app(), (error, _req, res, _next) => {
      seen.push([error.status, error.statusCode])
      res.status(error.status ?? error.statusCode ?? 500).json({ error: 'failed' })
    })
    expect(got.status).toBe(504)
    expect(seen).toEqual([[504, 504]])
  })
})
