import { ManualClock } from '@hourglass/core'
import type { Request } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, type IngressExpireMessage } from '../src/index.js'
import { client, deferred, listen, majors, type Running } from './support/servers.js'

/**
 * A route that started a slice and never ended it (its step failed, the
 * error swallowed: no `dispose`, no `end`), then went on to a plan of its
 * own under `req.deadline` (a cap of its own) whose step was running when
 * the request's time ran out. The 504 named the forgotten slice — over for
 * most of the request — not the step the time ran out in; and once that
 * step had ended too, it still named the forgotten one, not none.
 */
describe.each(majors)('the 504 names no slice left unended earlier ($name)', (major) => {
  let server: Running | undefined
  const agent = client({ connections: 1 })
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  async function expireAfter(
    route: (req: Request) => Promise<void>,
    plan?: Record<string, number>,
  ) {
    const clock = new ManualClock()
    const expired: IngressExpireMessage[] = []
    const started = deferred()
    const app = major.app()
    app.use(
      deadline({ clock, defaultMs: 1000, reserveMs: 10, plan, onExpire: (m) => expired.push(m) }),
    )
    app.get(
      '/',
      major.route(async (req: Request) => {
        await route(req)
        started.resolve()
        await new Promise(() => {})
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

  /** Slice `fetch` started and never ended: its step's error was swallowed. */
  function forget(start: () => unknown): Promise<void> {
    try {
      start()
      throw new Error('upstream refused')
    } catch {}
    return Promise.resolve()
  }

  it("names the later plan's running step", async () => {
    const got = await expireAfter(async (req) => {
      await forget(() => req.deadline.plan({ fetch: 1, rest: 1 }, { reserveMs: 0 }).slice('fetch'))
      req.deadline
        .child(5000)
        .plan({ model: 1 }, { reserveMs: 0 })
        .run('model', () => new Promise(() => {}))
        .catch(() => {})
    })
    expect(got).toEqual({ slice: 'model', events: ['model'] })
  })

  it("names the later plan's running step over deadline({ plan })'s forgotten one", async () => {
    const got = await expireAfter(
      async (req) => {
        await forget(() => req.plan!.slice('fetch'))
        req.deadline
          .child(5000)
          .plan({ model: 1 }, { reserveMs: 0 })
          .run('model', () => new Promise(() => {}))
          .catch(() => {})
      },
      { fetch: 1, rest: 1 },
    )
    expect(got).toEqual({ slice: 'model', events: ['model'] })
  })

  it('names the running step of a plan made on a deadline put in place of req.deadline', async () => {
    const got = await expireAfter(
      async (req) => {
        req.deadline = req.deadline.child(5000)
        req.deadline
          .plan({ model: 1 }, { reserveMs: 0 })
          .run('model', () => new Promise(() => {}))
          .catch(() => {})
      },
      { fetch: 1, rest: 1 },
    )
    expect(got).toEqual({ slice: 'model', events: ['model'] })
  })

  it('names none once the later step ended as well', async () => {
    const got = await expireAfter(async (req) => {
      await forget(() => req.deadline.plan({ fetch: 1, rest: 1 }, { reserveMs: 0 }).slice('fetch'))
      await req.deadline
        .child(5000)
        .plan({ model: 1 }, { reserveMs: 0 })
        .run('model', async () => 'answer')
    })
    expect(got).toEqual({ slice: null, events: [undefined] })
  })
})
