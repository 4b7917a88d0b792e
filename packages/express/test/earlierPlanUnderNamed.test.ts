import { ManualClock } from '@hourglass/core'
import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { deadline, type IngressExpireMessage } from '../src/index.js'
import { client, deferred, listen, majors, type Running } from './support/servers.js'

/**
 * A route's step `fetch`, run in a plan on a budget on trial under
 * `req.deadline`, still pending when the request's time ran out; meanwhile
 * a later plan under `req.deadline` (on the same trial, or a cap of its
 * own) had run a quick lookup to its end. Only the last plan made under a
 * deadline is kept: the earlier one's pending step was never read, and the
 * 504 said `"slice":null`.
 */
describe.each(majors)(
  'the 504 names a step pending in an earlier plan under req.deadline ($name)',
  (major) => {
    let server: Running | undefined
    afterEach(async () => {
      await server?.close()
      server = undefined
    })

    it.each([
      ['the same trial', true],
      ['another deadline under it', false],
    ])('a later plan on %s finished', async (_name, same) => {
      const clock = new ManualClock()
      const expired: IngressExpireMessage[] = []
      const started = deferred()
      const app = major.app()
      app.use(deadline({ clock, defaultMs: 1000, reserveMs: 10, onExpire: (m) => expired.push(m) }))
      app.get(
        '/',
        major.route(async (req) => {
          const trial = req.deadline.child(800, { observe: true })
          const fetching = trial
            .plan({ fetch: 1 }, { reserveMs: 0 })
            .run('fetch', () => new Promise(() => {}))
          const other = same ? trial : req.deadline.child(100)
          await other.plan({ lookup: 1 }, { reserveMs: 0 }).run('lookup', async () => 'found')
          started.resolve()
          await fetching
        }),
      )
      server = await listen(app)
      const answer = request(server.url, { dispatcher: client() })
      await started.promise
      clock.advance(990)
      const res = await answer
      const body = (await res.body.json()) as { slice: string | null }
      expect([res.statusCode, body.slice, expired.map((m) => m.slice)]).toEqual([
        504,
        'fetch',
        ['fetch'],
      ])
    })
  },
)
