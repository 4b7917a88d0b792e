import { Deadline, ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'

/**
 * A Map of slices was read as a record: no own properties, so a plan with
 * no slices, taken without a word, and every `run` failed later with
 * UNKNOWN_SLICE ("it has none"). Refused when the plan is made.
 */
it('refuses a Map of slices when the plan is made, saying what to pass', () => {
  const d = Deadline.after(1000, { clock: new ManualClock() })
  const entries = new Map([['model', 1]]) as unknown as Record<string, number>
  expect(() => d.plan(entries)).toThrow(
    new TypeError(
      'plan: entries must be an object of { name: share or { ms } }, got a Map (pass Object.fromEntries(map))',
    ),
  )
  // What it says to pass works.
  expect(d.plan(Object.fromEntries(new Map([['model', 1]]))).allotment('model')).toBe(990)
  d.dispose()
})
