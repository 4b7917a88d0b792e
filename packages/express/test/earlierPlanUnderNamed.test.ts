import { describe, expect, it } from 'vitest'
import { useServer } from './support/oneServer.js'
import { majors } from './support/servers.js'
import { sliceAtExpiry } from './support/sliceAtExpiry.js'

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
    const served = useServer()

    it.each([
      ['the same trial', true],
      ['another deadline under it', false],
    ])('a later plan on %s finished', async (_name, same) => {
      const got = await sliceAtExpiry(major, served, async (req, started) => {
        const trial = req.deadline.child(800, { observe: true })
        const fetching = trial
          .plan({ fetch: 1 }, { reserveMs: 0 })
          .run('fetch', () => new Promise(() => {}))
        const other = same ? trial : req.deadline.child(100)
        await other.plan({ lookup: 1 }, { reserveMs: 0 }).run('lookup', async () => 'found')
        started()
        await fetching
      })
      expect(got).toEqual({ status: 504, slice: 'fetch', events: ['fetch'] })
    })
  },
)
