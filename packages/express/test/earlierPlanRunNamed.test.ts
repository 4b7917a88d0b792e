import { ManualClock } from '@hourglass/core'
import type { Request } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, type IngressExpireMessage } from '../src/index.js'
import { client, deferred, listen, majors, type Running } from './support/servers.js'

/**
 * deadline({ plan })'s step `work`, started by `req.plan.run`, still pending
 * when the request's time ran out; meanwhile the route made a plan of its
 * own on `req.deadline` (the same deadline), whose step had finished. Only
 * the last plan made on a deadline is kept: the middleware's was never
 * read, and the 504 named no slice, where it used to name `work`.
 */
describe.each(majors)("the 504 names deadline({ plan })'s step run() started ($name)", (major) => {
  let server: Running | undefined
  const agent = client({ connections: 1 })
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  async function expireAfter(route: (req: Request) => Promise<void>) {
    const clock = new ManualClock()
    const expired: IngressExpireMessage[] = []
    const started = deferred()
    const app = major.app()
    app.use(
      deadline({
        clock,
        defaultMs: 1000,
        reserveMs: 10,
        plan: { work: 1, write: 1 },
        onExpire: (m) => expired.push(m),
      }),
    )
    app.get(
      '/',
      major.route(async (req: Request) => {
        await req.plan!.run('work', async () => {
          await route(req)
          started.resolve()
          await new Promise(() => {})
        })
      }),
    )
    server = await listen(app)
    const answer = request(server.url, { dispatcher: agent })
    await started.promise
    clock.advance(990)
    const res = await answer
    expect(res.statusCode).toBe(504)
    const body = (await res.body.json()) as { slice: string | null }
    return { slice: body.slice, events: expired.map((m) => m.slice) }
  }

  it('after a plan the route made on req.deadline and finished', async () => {
    const got = await expireAfter(async (req) => {
      await req.deadline.plan({ lookup: 1 }, { reserveMs: 0 }).run('lookup', async () => 'found')
    })
    expect(got).toEqual({ slice: 'work', events: ['work'] })
  })

  it('after a plan the route made on req.deadline whose slice() it ended', async () => {
    const got = await expireAfter(async (req) => {
      req.deadline.plan({ lookup: 1 }, { reserveMs: 0 }).slice('lookup').dispose()
    })
    expect(got).toEqual({ slice: 'work', events: ['work'] })
  })

  it("names the route plan's step while it runs", async () => {
    const got = await expireAfter(async (req) => {
      req.deadline
        .plan({ lookup: 1 }, { reserveMs: 0 })
        .run('lookup', () => new Promise(() => {}))
        .catch(() => {})
    })
    expect(got).toEqual({ slice: 'lookup', events: ['lookup'] })
  })
})
