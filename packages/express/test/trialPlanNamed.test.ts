import type { Deadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { useServer } from './support/oneServer.js'
import { majors } from './support/servers.js'
import { sliceAtExpiry } from './support/sliceAtExpiry.js'

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
    const served = useServer()

    async function expireDuring(under: (request: Deadline) => Deadline, plan = true) {
      const { status, ...named } = await sliceAtExpiry(major, served, async (req, started) => {
        const own = under(req.deadline)
        if (plan) {
          own
            .plan({ model: 1 }, { reserveMs: 0 })
            .run('model', () => new Promise(() => {}))
            .catch(() => {})
        }
        started()
        await new Promise(() => {})
      })
      expect(status).toBe(504)
      return named
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
