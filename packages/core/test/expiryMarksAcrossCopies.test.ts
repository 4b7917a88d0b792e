import {
  Deadline,
  DeadlineExceededError,
  isExpiryOf,
  isForeignExpiry,
  ManualClock,
} from '@hourglass/core'
import { describe, expect, it } from 'vitest'

// Two installed copies of core (two versions in one tree) share the one
// context, so an error marked by one reaches the other: a gRPC client on one
// copy marks a remote's own cap `markForeignExpiry`, the Express app's
// `deadlineErrors()` on the other asks `isExpiryOf`. The query makes a second
// instance of the module, with the marks of its own that another copy has.
const other = (await import(
  // @ts-expect-error -- a query the module resolver does not type
  '../src/Deadline.ts?expiry-marks-copy'
)) as typeof import('../src/Deadline.js')

describe('isExpiryOf reads the marks another copy of core made', () => {
  it('is a second module instance (the premise)', () => {
    expect(other.Deadline).not.toBe(Deadline)
  })

  it("a remote's expiry the other copy marked foreign is no expiry of this copy's deadline", () => {
    const request = Deadline.after(1000, { clock: new ManualClock() })
    const remote = other.markForeignExpiry(
      new DeadlineExceededError({ budgetMs: 50, elapsedMs: 50 }),
    )
    expect(isExpiryOf(remote, request)).toBe(false)
    expect(other.isExpiryOf(remote, request)).toBe(false)
    // Told as one with no deadline to ask about, by either copy.
    expect(isForeignExpiry(remote)).toBe(true)
    expect(other.isForeignExpiry(remote)).toBe(true)
  })

  it('isForeignExpiry is false for every other error: unmarked, made by a deadline, or no error at all', () => {
    const clock = new ManualClock()
    const cap = other.Deadline.after(20, { clock })
    clock.advance(20)
    expect(isForeignExpiry(cap.reason)).toBe(false)
    expect(isForeignExpiry(new DeadlineExceededError({ budgetMs: 1, elapsedMs: 1 }))).toBe(false)
    expect(isForeignExpiry('DEADLINE_EXCEEDED')).toBe(false)
    expect(isForeignExpiry(null)).toBe(false)
  })

  it('the expiry of an unrelated deadline of the other copy (a cap of its own) is not this one’s', () => {
    const clock = new ManualClock()
    const request = Deadline.after(1000, { clock })
    const cap = other.Deadline.after(20, { clock })
    clock.advance(20)
    expect(isExpiryOf(cap.reason, request)).toBe(false)
    expect(request.done).toBe(false)
  })

  it("an error the other copy made for this deadline's line is still its own", () => {
    const clock = new ManualClock()
    const request = Deadline.after(1000, { clock })
    const step = request.child(100)
    const forRequest = other.markExpiryOf(
      new DeadlineExceededError({ budgetMs: 1000, elapsedMs: 0 }),
      request,
    )
    // Made for the request, read inside a step under it; and for the step, read at the request.
    expect(isExpiryOf(forRequest, step)).toBe(true)
    const forStep = other.markExpiryOf(
      new DeadlineExceededError({ budgetMs: 100, elapsedMs: 0 }),
      step,
    )
    expect(isExpiryOf(forStep, request)).toBe(true)
    // A deadline made through the other copy's Deadline.after under this one
    // (which hands it to the parent's own child()): its expiry is this line's too.
    const under = other.Deadline.after(10, { clock, parent: request })
    clock.advance(10)
    expect(isExpiryOf(under.reason, request)).toBe(true)
  })
})
