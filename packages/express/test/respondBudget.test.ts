import { type DeadlineExceededError, isExpiryOf, ManualClock } from '@hourglass/core'
import type { Request } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, deadlineErrors, type IngressExpireMessage } from '../src/index.js'
import { client, deferred, listen, majors, type Running } from './support/servers.js'

/**
 * The error `respond` is given reports the request's budget (`budgetMs`,
 * what the plain 504's body and the `expire` event say), however the time
 * ran out. Before, the same request said 990 (the handler's deadline, the
 * budget less `reserveMs`) when its own timer fired and 1000 when a slice ran
 * out first and reached `deadlineErrors()`.
 */
describe.each(majors)("respond's error: the request's budget either way ($name)", (major) => {
  let server: Running | undefined
  const agent = client({ connections: 1 })
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  async function expireBy(how: 'timer' | 'slice') {
    const clock = new ManualClock()
    const given: DeadlineExceededError[] = []
    const expired: IngressExpireMessage[] = []
    let requestDeadline: Request['deadline'] | undefined
    const started = deferred()
    const app = major.app()
    app.use(
      deadline({
        clock,
        defaultMs: 1000,
        reserveMs: 10,
        onExpire: (m) => expired.push(m),
        respond: (_req, res, error) => {
          given.push(error)
          res.status(504).json({ budgetMs: error.budgetMs, slice: error.slice ?? null })
        },
      }),
    )
    app.get(
      '/',
      major.route(async (req) => {
        requestDeadline = req.deadline
        // A slice that ends with the request, or one that runs out first.
        const entry = how === 'slice' ? { ms: 500 } : 1
        const plan = req.deadline.plan({ model: entry }, { reserveMs: 0 })
        const running = plan.run('model', () => new Promise(() => {}))
        started.resolve()
        if (how === 'slice')
          await running // the slice's expiry goes to deadlineErrors()
        else running.catch(() => {})
        await new Promise(() => {})
      }),
    )
    app.use(deadlineErrors())
    server = await listen(app)
    const answer = request(server.url, { dispatcher: agent })
    await started.promise
    clock.advance(how === 'slice' ? 500 : 990)
    const res = await answer
    expect(res.statusCode).toBe(504)
    return { body: await res.body.json(), given, expired, requestDeadline }
  }

  it.each(['timer', 'slice'] as const)('when %s ran out', async (how) => {
    const got = await expireBy(how)
    expect(got.given).toHaveLength(1)
    const error = got.given[0]!
    expect(error.budgetMs).toBe(1000)
    expect(got.expired.map((m) => m.budgetMs)).toEqual([1000])
    expect(got.body).toEqual({ budgetMs: 1000, slice: 'model' })
    // Still the request's expiry.
    expect(isExpiryOf(error, got.requestDeadline!)).toBe(true)
  })
})
