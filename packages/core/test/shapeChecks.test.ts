import { describe, expect, it } from 'vitest'
import { Deadline } from '../src/Deadline.js'
import { isAbortSignal } from '../src/isAbortSignal.js'
import { isDeadline } from '../src/isDeadline.js'
import { ManualClock } from '../src/ManualClock.js'

describe('the shape checks every package uses where a deadline or a signal is given', () => {
  it('isDeadline: a Deadline (of this copy or another, by shape), nothing that stands in for one', () => {
    const deadline = Deadline.after(100, { clock: new ManualClock() })
    expect(isDeadline(deadline)).toBe(true)
    expect(isDeadline(Deadline.never())).toBe(true)
    // Another installed copy's: the same methods on another prototype.
    const foreign = { remaining: () => 1, throwIfExpired: () => {}, onDone: () => () => {} }
    expect(isDeadline(foreign)).toBe(true)
    for (const value of [5000, new Date(), {}, null, undefined, 'soon', { remaining: 5 }]) {
      expect(isDeadline(value)).toBe(false)
    }
    deadline.dispose()
  })

  it('isAbortSignal: a signal, not its controller or an object that only looks half like one', () => {
    const controller = new AbortController()
    expect(isAbortSignal(controller.signal)).toBe(true)
    expect(isAbortSignal(AbortSignal.abort())).toBe(true)
    for (const value of [controller, {}, null, undefined, true, { aborted: false }]) {
      expect(isAbortSignal(value)).toBe(false)
    }
  })

  it('Deadline.after names what it was given as every option error does: a string shown as one, not read as the number', () => {
    expect(() => Deadline.after('100' as unknown as number)).toThrow(
      "Deadline.after expects a number of milliseconds, got '100' (a string)",
    )
    expect(() => Deadline.after({} as unknown as number)).toThrow(
      'Deadline.after expects a number of milliseconds, got an object',
    )
    expect(() => Deadline.after(Number.NaN)).toThrow(
      'Deadline.after expects a number of milliseconds, got NaN',
    )
  })
})
