import { Deadline, ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'

// Every share is checked to be finite, but shares are relative and their sum
// was not: { a: 1e308, b: 1e308 } adds up to Infinity, every share slice was
// allotted Infinity / Infinity = NaN, and started with a TypeError about NaN
// milliseconds — per request, not when the plan was given.

it('refuses shares whose sum overflows when the plan is made, with a RangeError', () => {
  const deadline = Deadline.after(1000, { clock: new ManualClock() })
  expect(() => deadline.plan({ a: 1e308, b: 1e308 })).toThrow(
    new RangeError('slice shares must add up to a finite number, got Infinity'),
  )
})

it('large shares that add up to a finite number still split the time', () => {
  const deadline = Deadline.after(1010, { clock: new ManualClock() })
  const plan = deadline.plan({ a: 1e307, b: 1e307 })
  expect(plan.allotment('a')).toBe(500)
})
