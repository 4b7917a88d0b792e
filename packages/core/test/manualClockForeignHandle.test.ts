import { Deadline, ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'

// Each ManualClock numbered its timers 1, 2, 3…: a handle from clock A given
// to clock B's clearTimeout (a wrapper that routes to the wrong clock, a
// test with two clocks) cancelled B's own timer of the same number, and what
// it guarded — a deadline, a wait — then never ended. A handle a clock did
// not issue cancels nothing.

it('a handle from another ManualClock cancels nothing on this one', () => {
  const a = new ManualClock()
  const b = new ManualClock()
  const fromA = a.setTimeout(() => {}, 10)
  let fired = false
  b.setTimeout(() => {
    fired = true
  }, 10)
  b.clearTimeout(fromA)
  b.advance(10)
  expect(fired).toBe(true)
  expect(a.pendingTimers).toBe(1)
})

it("a deadline on one clock survives another clock's clearTimeout of its own handles", () => {
  const a = new ManualClock()
  const b = new ManualClock()
  const fromA = a.setTimeout(() => {}, 10) // A's first timer, as the deadline's is B's
  let expired = false
  const deadline = Deadline.after(10, { clock: b, onExpire: () => (expired = true) })
  b.clearTimeout(fromA)
  b.advance(10)
  expect(expired).toBe(true)
  expect(deadline.signal.aborted).toBe(true)
})

it('a number or anything else it did not issue cancels nothing', () => {
  const clock = new ManualClock()
  let fired = 0
  const own = clock.setTimeout(() => fired++, 5)
  clock.setTimeout(() => fired++, 5)
  for (const foreign of [1, 2, '1', {}, undefined, null]) clock.clearTimeout(foreign)
  expect(clock.pendingTimers).toBe(2)
  clock.clearTimeout(own)
  expect(clock.pendingTimers).toBe(1)
  clock.advance(5)
  expect(fired).toBe(1)
})
