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

/**
 * `plan: 0`, `plan: ''` or `plan: false` (a config value that was meant to
 * be a plan) read as no plan: the middleware started, and every request ran
 * without the slices the app was written for, `req.plan` undefined. Only
 * null and undefined are no plan.
 */
it('refuses a falsy plan that is not null or undefined when the middleware is created, and takes null as none', () => {
  for (const plan of [0, '', false]) {
    expect(
      () => deadline({ clock: new ManualClock(), plan: plan as unknown as Record<string, number> }),
      String(plan),
    ).toThrow(/plan: entries must be an object of \{ name: share or \{ ms \} \}/)
  }
  expect(() =>
    deadline({ clock: new ManualClock(), plan: null as unknown as Record<string, number> }),
  ).not.toThrow()
})
