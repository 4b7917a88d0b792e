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

// A timer's callback that advances the clock further (a helper driving time
// from inside a callback) ran past the outer step's target, and the outer
// advance then set the time back to its own target: a deadline made after it
// expired later than its budget, time read by the callback's work went back.
it('never moves back when a timer callback advances past the outer step', () => {
  const clock = new ManualClock()
  const seen: number[] = []
  clock.setTimeout(() => {
    clock.advance(100)
    seen.push(clock.now())
  }, 5)
  clock.advance(10)
  expect(seen).toEqual([105])
  expect(clock.now()).toBe(105)
  const deadline = Deadline.after(50, { clock })
  expect(deadline.startedAt).toBe(105)
  clock.advance(50)
  expect(deadline.expired).toBe(true)
})
