import { setTimeout as wait } from 'node:timers/promises'
import { ClientClosedError, ManualClock } from '@hourglass/core'
import type { ErrorRequestHandler, Request } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { client, deferred, listen, majors, type Running } from './support/servers.js'

/**
 * Hedged calls (`Promise.any` over two providers, each given the request's
 * signal): when the deadline answers, both abort, and `Promise.any` rejects
 * with an `AggregateError` of the two aborts — the handler noticing, as a
 * single call's abort is. deadlineErrors() swallowed the abort alone but
 * passed the aggregate on: the app's error handler logged a stack for every
 * 504 a hedged route got (and Express's final handler did, with none).
 */
describe.each(majors)('an AggregateError of the aborts the deadline caused ($name)', (major) => {
  let server: Running | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  async function serve(
    hedge: (signal: AbortSignal, req: Request) => Promise<unknown>,
    leave: boolean,
    advanceMs = 990,
  ): Promise<{ passedOn: unknown[]; judged: unknown; status: number | string; body: string }> {
    const clock = new ManualClock()
    const app = major.app()
    app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock }))
    const entered = deferred()
    app.get(
      '/',
      major.route(async (req, res) => {
        const answer = hedge(req.deadline.signal, req)
        entered.resolve()
        res.json(await answer)
      }),
    )
    const judged = deferred<unknown>()
    app.use(((error, _req, _res, next) => {
      next(error)
      judged.resolve(error)
    }) as ErrorRequestHandler)
    app.use(deadlineErrors())
    const passedOn: unknown[] = []
    app.use(((error, _req, res, _next) => {
      passedOn.push(error)
      res.status(500).json({ error: 'internal' })
    }) as ErrorRequestHandler)
    server = await listen(app)
    const leaving = new AbortController()
    const pending = request(server.url, {
      dispatcher: client(),
      signal: leaving.signal,
    }).then(
      async (r) => ({ status: r.statusCode as number | string, body: await r.body.text() }),
      (error: { code?: string }) => ({ status: error.code ?? 'error', body: '' }),
    )
    await entered.promise
    if (leave) leaving.abort()
    else clock.advance(advanceMs)
    const { status, body } = await pending
    return { passedOn, judged: await judged.promise, status, body }
  }

  const abortable = (signal: AbortSignal) => wait(60_000, null, { signal })

  it('after the 504: swallowed, as each abort alone is', async () => {
    const { passedOn, judged, status } = await serve(
      (signal) => Promise.any([abortable(signal), abortable(signal)]),
      false,
    )
    expect(status).toBe(504)
    expect(judged).toBeInstanceOf(AggregateError)
    expect(passedOn).toEqual([])
  })

  it('after the client left: swallowed, nobody to answer', async () => {
    const { passedOn, judged } = await serve(
      (signal) => Promise.any([abortable(signal), abortable(signal)]),
      true,
    )
    expect(judged).toBeInstanceOf(AggregateError)
    expect((judged as AggregateError).errors[0].cause).toBeInstanceOf(ClientClosedError)
    expect(passedOn).toEqual([])
  })

  it('before the 504, all ended by a deadline under the request’s: answered as that expiry, a 504', async () => {
    // A cap on the hedge (`req.deadline.child(100)`): one call cut by it is
    // answered 504; the aggregate of two was a 500 from the app's handler.
    const { passedOn, judged, status, body } = await serve(
      (_signal, req) => {
        const cap = req.deadline.child(100)
        return Promise.any([abortable(cap.signal), abortable(cap.signal)])
      },
      false,
      100,
    )
    expect(judged).toBeInstanceOf(AggregateError)
    expect(passedOn).toEqual([])
    expect(status).toBe(504)
    expect(JSON.parse(body)).toMatchObject({ error: 'deadline_exceeded' })
  })

  it('one of the app’s own failures among them: passed on', async () => {
    const { passedOn, judged } = await serve(
      (signal) =>
        Promise.any([
          abortable(signal),
          abortable(signal).catch(() => Promise.reject(new Error('bad key'))),
        ]),
      false,
    )
    expect(judged).toBeInstanceOf(AggregateError)
    expect(passedOn).toEqual([judged])
  })
})
