import { DeadlineExceededError, expiryError, ManualClock, markForeignExpiry } from '@hourglass/core'
import type { ErrorRequestHandler, Request } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { client, listen, majors, type Running } from './support/servers.js'

/**
 * Hedged calls to two Hourglass backends (`Promise.any` over two gRPC calls
 * read with `fromGrpcError`, two `callModel`s through hops that answer 504
 * `x-deadline-expired: 1`, or the README's own `throw new
 * DeadlineExceededError(…)` for a marked 504): each backend tells the
 * request's expiry early, its reserve before our timer, and each rejection
 * is an error of its own for that one deadline. One alone is answered 504
 * `x-deadline-expired: 1`; the aggregate of two reached the app's error
 * handler, a 500 — `endedAlike` asked for one and the same error object.
 * No real time: the requests' own timers never fire (ManualClock).
 */
describe.each(majors)(
  'an AggregateError of the request’s expiry, told early by each hedged call ($name)',
  (major) => {
    let server: Running | undefined
    afterEach(async () => {
      await server?.close()
      server = undefined
    })

    async function serve(
      hedge: (req: Request) => Promise<unknown>,
    ): Promise<{ passedOn: unknown[]; status: number; expired: unknown; body: string }> {
      const clock = new ManualClock()
      const app = major.app()
      app.use(deadline({ defaultMs: 1000, reserveMs: 10, clock }))
      app.get(
        '/',
        major.route(async (req, res) => {
          res.json(await hedge(req))
        }),
      )
      app.use(deadlineErrors())
      const passedOn: unknown[] = []
      app.use(((error, _req, res, _next) => {
        passedOn.push(error)
        res.status(500).json({ error: 'internal' })
      }) as ErrorRequestHandler)
      server = await listen(app)
      const r = await request(server.url, {
        dispatcher: client(),
        headers: { 'x-deadline-remaining-ms': '1000' },
      })
      return {
        passedOn,
        status: r.statusCode,
        expired: r.headers['x-deadline-expired'],
        body: await r.body.text(),
      }
    }

    const toldEarly = (req: Request) => Promise.reject(expiryError(req.deadline))

    it('each marked as the request’s expiry (gRPC’s client, llm): a 504 with x-deadline-expired, as for one call', async () => {
      const one = await serve((req) => toldEarly(req))
      expect({ status: one.status, expired: one.expired }).toEqual({ status: 504, expired: '1' })
      const { passedOn, status, expired, body } = await serve((req) =>
        Promise.any([toldEarly(req), toldEarly(req)]),
      )
      expect(passedOn).toEqual([])
      expect({ status, expired }).toEqual({ status: 504, expired: '1' })
      expect(JSON.parse(body)).toMatchObject({ error: 'deadline_exceeded' })
    })

    it('each made by the app for a marked 504 (the README’s example): a 504 too', async () => {
      const made = () =>
        Promise.reject(
          new DeadlineExceededError({ budgetMs: 1000, elapsedMs: 990, slice: 'model' }),
        )
      const { passedOn, status } = await serve(() => Promise.any([made(), made()]))
      expect(passedOn).toEqual([])
      expect(status).toBe(504)
    })

    it('one of them another deadline’s (a remote’s own cap): passed on', async () => {
      const { passedOn, status } = await serve((req) =>
        Promise.any([
          toldEarly(req),
          Promise.reject(
            markForeignExpiry(new DeadlineExceededError({ budgetMs: 50, elapsedMs: 50 })),
          ),
        ]),
      )
      expect(passedOn).toHaveLength(1)
      expect(passedOn[0]).toBeInstanceOf(AggregateError)
      expect(status).toBe(500)
    })
  },
)
