import { type Deadline, ManualClock } from '@hourglass/core'
import type { Request } from 'express'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, type IngressExpireMessage } from '../src/index.js'
import { client, deferred, listen, majors, type Running } from './support/servers.js'

/**
 * A plan a route made on a deadline under `req.deadline` — a budget on
 * trial (`req.deadline.child(100, { observe: true })`, dark mode for one
 * step), or a cap of its own — whose step was running when the request's
 * time ran out: the 504 names that step, as it names one of a plan made on
 * `req.deadline` itself. Before, it said `"slice":null`.
 */
describe.each(majors)(
  "the 504 names a slice of a plan made under the request's deadline ($name)",
  (major) => {
    let server: Running | undefined
    const agent = client({ connections: 1 })
    afterEach(async () => {
      await server?.close()
      server = undefined
    })

    async function expireDuring(under: (request: Deadline) => Deadline, plan = true) {
      const clock = new ManualClock()
      const expired: IngressExpireMessage[] = []
      const started = deferred()
      const app = major.app()
      app.use(deadline({ clock, defaultMs: 1000, reserveMs: 10, onExpire: (m) => expired.push(m) }))
      app.get(
        '/',
        major.route(async (req: Request) => {
          const own = under(req.deadline)
          if (plan) {
            own
              .plan({ model: 1 }, { reserveMs: 0 })
              .run('model', () => new Promise(() => {}))
              .catch(() => {})
          }
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

    it('a budget on trial', async () => {
      const got = await expireDuring((d) => d.child(100, { observe: true }))
      expect(got).toEqual({ slice: 'model', events: ['model'] })
    })

    it('a cap of its own, longer than what the request has left', async () => {
      const got = await expireDuring((d) => d.child(5000))
      expect(got).toEqual({ slice: 'model', events: ['model'] })
    })

    it('none when no plan was made', async () => {
      const got = await expireDuring((d) => d.child(100, { observe: true }), false)
      expect(got).toEqual({ slice: null, events: [undefined] })
    })
  },
)
