import { Deadline, ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'

// ManualClock stands in for a monotonic clock. advance(-5) moved it
// backwards (a deadline's remaining() grew), and advance(NaN) left it
// reading NaN for good: every deadline made on it afterwards never expired.

it('refuses a negative, NaN or infinite step with a RangeError and keeps its time', () => {
  const clock = new ManualClock(100)
  for (const step of [-5, Number.NaN, Number.POSITIVE_INFINITY]) {
    expect(() => clock.advance(step)).toThrow(RangeError)
  }
  expect(clock.now()).toBe(100)
  const deadline = Deadline.after(10, { clock })
  clock.advance(10)
  expect(deadline.expired).toBe(true)
})
