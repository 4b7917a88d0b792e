import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/**
 * A `name` that is no string (from JavaScript: a Symbol, an object whose
 * toString throws) was taken, and failed only at expiry: writing the
 * `DeadlineExceededError`'s message threw inside the timer's callback — an
 * uncaught exception on a real clock — and left the deadline half ended:
 * `done`, with no reason, its signal never aborted, its onDone listeners
 * never called. Refused at once, naming the option, as every other option.
 */
describe('Deadline: name', () => {
  it('a name that is no string is a TypeError at creation', () => {
    const clock = new ManualClock()
    for (const name of [Symbol('step'), 42, { toString: () => 'x' }]) {
      expect(() => Deadline.after(10, { clock, name: name as unknown as string })).toThrow(
        /^Deadline: name must be a string, got /,
      )
      expect(() => Deadline.never({ name: name as unknown as string })).toThrow(TypeError)
    }
    expect(clock.pendingTimers).toBe(0)
  })

  it('a string, undefined or null is taken as before', () => {
    const clock = new ManualClock()
    const named = Deadline.after(10, { clock, name: 'model' })
    const unnamed = Deadline.after(10, {
      clock,
      name: null as unknown as undefined,
    })
    clock.advance(10)
    expect(named.reason).toMatchObject({ code: 'DEADLINE_EXCEEDED', slice: 'model' })
    expect(unnamed.reason).toMatchObject({ code: 'DEADLINE_EXCEEDED', slice: undefined })
  })
})
