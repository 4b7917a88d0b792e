import { type DeadlineExceededError, isExpiryOf, ManualClock } from '@hourglass/core'
import type { Request } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors } from '../src/index.js'
import { client, deferred, listen, majors, type Running } from './support/servers.js'

/**
 * The request's own timer ran out while a slice was running: the plain 504
 * names that slice (`"slice":"model"`), and so does the `expire` event, but
 * the error handed to `respond` was the timer's, which names none (the
 * request's deadline has no name): an API's own 504 shape lost the slice
 * exactly where the plain one has it (a slice that ran out first, through
 * deadlineErrors(), had it).
 */
describe.each(majors)("respond's error names the running slice ($name)", (major) => {
  let server: Running | undefined
  const agent = client({ connections: 1 })
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  async function expireDuring(start: (req: Request) => void) {
    const clock = new ManualClock()
    const given: DeadlineExceededError[] = []
    const expired: Array<string | undefined> = []
    let requestDeadline: Request['deadline'] | undefined
    const started = deferred()
    const app = major.app()
    app.use(
      deadline({
        clock,
        defaultMs: 1000,
        reserveMs: 10,
        plan: { model: 1 },
        onExpire: (m) => expired.push(m.slice),
        respond: (_req, res, error) => {
          given.push(error)
          res.status(504).json({ code: 'deadline_exceeded', slice: error.slice ?? null })
        },
      }),
    )
    app.get(
      '/',
      major.route(async (req) => {
        requestDeadline = req.deadline
        start(req)
        started.resolve()
        await new Promise(() => {}) // ignores every signal
      }),
    )
    app.use(deadlineErrors())
    server = await listen(app)
    const answer = request(server.url, { dispatcher: agent })
    await started.promise
    clock.advance(990) // the request's deadline (1000 less the reserve)
    const res = await answer
    return { body: await res.body.json(), given, expired, requestDeadline }
  }

  it('for a slice started with plan.slice() whose step ignores its signal', async () => {
    const got = await expireDuring((req) => {
      req.plan!.slice('model')
    })
    expect(got.body).toEqual({ code: 'deadline_exceeded', slice: 'model' })
    expect(got.expired).toEqual(['model'])
    expect(got.given).toHaveLength(1)
    const error = got.given[0]!
    expect(error.slice).toBe('model')
    // Still the request's expiry, with the request's figures (its budget, not
    // the handler's 990: see respondBudget.test.ts).
    expect(isExpiryOf(error, got.requestDeadline!)).toBe(true)
    expect(error.budgetMs).toBe(1000)
  })

  it("for a route's own plan whose slice ends with the request", async () => {
    const got = await expireDuring((req) => {
      req.deadline
        .plan({ fetch: 1 }, { reserveMs: 0 })
        .run('fetch', () => new Promise(() => {}))
        .catch(() => {})
    })
    expect(got.body).toEqual({ code: 'deadline_exceeded', slice: 'fetch' })
    expect(got.given.map((e) => e.slice)).toEqual(['fetch'])
  })

  it('names none when no slice was running', async () => {
    const got = await expireDuring(() => {})
    expect(got.body).toEqual({ code: 'deadline_exceeded', slice: null })
    expect(got.given.map((e) => e.slice)).toEqual([undefined])
  })
})
