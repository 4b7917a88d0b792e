import { type Clock, Deadline, systemClock, writeDeadline } from '@hourglass/core'
import { expect, it } from 'vitest'

// A deadline on a clock that reads NaN had NaN for its expiry: never armed,
// never expired, `expired` false for ever, and writeDeadline wrote nothing
// downstream — a request with no deadline at all, without a word. It is
// refused where it is made.

it('throws a TypeError naming the clock when clock.now() is NaN', () => {
  const broken: Clock = { ...systemClock, now: () => Number.NaN }
  expect(() => Deadline.after(100, { clock: broken })).toThrow(
    new TypeError('clock.now() must return a number of ms, got NaN'),
  )
  expect(() => Deadline.never({ clock: broken })).toThrow(TypeError)
})

it('a sound clock still gives a deadline that is written downstream', () => {
  const headers: Record<string, string> = {}
  expect(writeDeadline(headers, Deadline.after(100))).toBeGreaterThan(0)
})
