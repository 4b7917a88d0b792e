import type { ServerResponse } from 'node:http'
import {
  ClientClosedError,
  currentDeadline,
  Deadline,
  isClientClosed,
  ManualClock,
  runWithDeadline,
} from '@hourglass/core'
import type { ErrorRequestHandler, Request } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { aborted, client, deferred, listen, majors, type Running } from './support/servers.js'

/**
 * Two requests share one upstream call (a single-flight map): the first
 * starts it under its own deadline (a client that reads `currentDeadline()`,
 * as `@hourglass/fetch` does), then its client leaves, and the call rejects
 * with that request's `ClientClosedError`. The second, still connected,
 * passes it to `next`. deadlineErrors() swallowed it as if it were the
 * second request's own: it waited out its whole budget for a 504 saying not
 * to retry (enforce), or never got an answer (observe, or no deadline()).
 */
const setups = [
  { name: 'enforce', mode: 'enforce' },
  { name: 'observe', mode: 'observe' },
  { name: 'without deadline()', mode: undefined },
] as const

describe.each(majors)('a ClientClosedError of another request ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it.each(setups)(
    '$name: goes to the app error handler, which answers the caller still connected',
    async ({ mode }) => {
      // Never advanced: an answer can only come from the app, not the budget's end.
      const clock = new ManualClock()
      const app = major.app()
      if (mode !== undefined) app.use(deadline({ defaultMs: 60_000, mode, clock }))
      else app.use(ownDeadline(clock))
      let shared: Promise<unknown> | undefined
      const started = deferred()
      const joined = deferred()
      app.get(
        '/',
        major.route(async (req, res) => {
          if (shared === undefined) {
            // The upstream call picks up the deadline of the request that starts it.
            shared = runWithDeadline(req.deadline, () => upstream())
            started.resolve()
          } else {
            joined.resolve()
          }
          res.json(await shared)
        }),
      )
      // Sees what each handler passed on, hands it to deadlineErrors(), and
      // once that returns (Express calls on synchronously) the error was judged.
      const judged = { A: deferred<unknown>(), B: deferred<unknown>() }
      app.use(((error, req, _res, next) => {
        next(error)
        judged[req.headers['x-who'] as 'A' | 'B'].resolve(error)
      }) as ErrorRequestHandler)
      app.use(deadlineErrors())
      const passedOn: Array<[unknown, unknown]> = []
      app.use(((error, req, res, _next) => {
        passedOn.push([req.headers['x-who'], error])
        res.status(502).json({ error: 'upstream' })
      }) as ErrorRequestHandler)
      server = await listen(app)

      const leaving = new AbortController()
      const a = request(server.url, {
        headers: { 'x-who': 'A' },
        dispatcher: client(),
        signal: leaving.signal,
      })
      a.catch(() => {})
      await started.promise
      const b = request(server.url, { headers: { 'x-who': 'B' }, dispatcher: client() })
      b.catch(() => {})
      await joined.promise
      leaving.abort()

      const fromB = await judged.B.promise
      expect(isClientClosed(fromB)).toBe(true)
      // A's own departure is nobody's to answer; B's caller is still there.
      await judged.A.promise
      expect(passedOn).toEqual([['B', fromB]])
      const answer = await b
      expect(answer.statusCode).toBe(502)
      expect(answer.headers['x-deadline-expired']).toBeUndefined()
      expect(await answer.body.json()).toEqual({ error: 'upstream' })
    },
  )

  it.each(setups)(
    "$name: a body parser's 'request aborted' for a body this request read in full is passed on",
    async ({ mode }) => {
      const clock = new ManualClock()
      const app = major.app()
      if (mode !== undefined) app.use(deadline({ defaultMs: 60_000, mode, clock }))
      app.use(major.json())
      // Not this request's upload: one it relayed from elsewhere failed so.
      const relayed = Object.assign(new Error('request aborted'), {
        type: 'request.aborted',
        status: 400,
      })
      const judged = deferred()
      app.post('/', (_req, _res, next) => {
        next(relayed)
        // Express calls the error handlers synchronously: judged once it returns.
        judged.resolve()
      })
      app.use(deadlineErrors())
      const passedOn: unknown[] = []
      app.use(((error, _req, res, _next) => {
        passedOn.push(error)
        res.status(502).json({ error: 'upstream' })
      }) as ErrorRequestHandler)
      server = await listen(app)
      const pending = request(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"whole":true}',
        dispatcher: client(),
      })
      pending.catch(() => {})
      await judged.promise
      expect(passedOn).toEqual([relayed])
      const answer = await pending
      expect(answer.statusCode).toBe(502)
      await answer.body.dump()
    },
  )
})

/**
 * Without deadline(): the app's own deadline per request, cancelled with
 * `ClientClosedError` when its response closes before it ended.
 */
function ownDeadline(clock: ManualClock) {
  return (req: Request, res: ServerResponse, next: () => void): void => {
    const own = Deadline.after(60_000, { clock })
    req.deadline = own
    res.on('close', () => {
      if (!res.writableEnded) own.cancel(new ClientClosedError())
    })
    next()
  }
}

/** An upstream call that never answers, rejecting with the reason its deadline ends with (as fetch does). */
async function upstream(): Promise<unknown> {
  const signal = currentDeadline()!.signal
  await aborted(signal)
  throw signal.reason
}
