import { ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'
import { deadline } from '../src/index.js'

/**
 * `deadline({ plan: new Map(…) })` was taken at boot as a plan with no
 * slices: every request's `req.plan.run('model', …)` then failed with
 * UNKNOWN_SLICE (a 500 per request). A bad plan fails at boot.
 */
it('refuses a Map for plan when the middleware is created', () => {
  const plan = new Map([['model', 1]]) as unknown as Record<string, number>
  expect(() => deadline({ clock: new ManualClock(), plan })).toThrow(/got a Map/)
})
