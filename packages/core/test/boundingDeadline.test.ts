import {
  boundingDeadline,
  Deadline,
  enforcedRemaining,
  ManualClock,
  writeDeadline,
} from '@hourglass/core'
import { describe, expect, it } from 'vitest'

// One rule for what bounds work under a deadline — core's writeDeadline and
// enforcedRemaining, fetch's refusal and phase limits, the gRPC client's
// refusal, header and gRPC deadline: the deadline itself when it enforces,
// else the nearest above it that enforces (a budget on trial inside an
// enforced request is ended when the request's deadline expires), or,
// observe-only, one with at least `observedMs` left. fetch and the gRPC
// client had their own copies reading the trial's `observe` alone.

describe('boundingDeadline', () => {
  it('an enforcing deadline is its own bound; a trial under one, that one', () => {
    const clock = new ManualClock()
    using request = Deadline.after(1000, { clock })
    using step = request.child(100)
    using trial = request.child(100, { observe: true })
    using inner = trial.child(50)
    expect(boundingDeadline(request)).toBe(request)
    expect(boundingDeadline(step)).toBe(step)
    expect(boundingDeadline(trial)).toBe(request)
    expect(boundingDeadline(inner)).toBe(request)
    // Observe-only ones with time enough count when asked to.
    clock.advance(60)
    expect(boundingDeadline(trial, 1)).toBe(trial)
    expect(boundingDeadline(trial, 41)).toBe(request)
    expect(boundingDeadline(undefined)).toBeUndefined()
  })

  it('dark mode throughout bounds nothing; observe-only ones with time, when asked', () => {
    const clock = new ManualClock()
    using dark = Deadline.after(1000, { clock, observe: true })
    using step = dark.child(100)
    clock.advance(150)
    expect(boundingDeadline(step)).toBeUndefined()
    expect(boundingDeadline(step, 1)).toBe(dark)
    expect(enforcedRemaining(step)).toBe(Number.POSITIVE_INFINITY)
  })

  it('not past one that never expires: a trial disposed while live is sent, and planned, as under no deadline', () => {
    const clock = new ManualClock()
    using request = Deadline.after(1000, { clock })
    const trial = request.child(500, { observe: true })
    trial.dispose()
    clock.advance(100)
    expect(boundingDeadline(trial)).toBeUndefined()
    // As writeDeadline already sent nothing for it (its parent's expiry no longer ends it).
    expect(writeDeadline({}, trial)).toBeUndefined()
    expect(enforcedRemaining(trial)).toBe(Number.POSITIVE_INFINITY)
    using underNever = Deadline.never({ clock }).child(100, { observe: true })
    expect(boundingDeadline(underNever)?.remaining()).toBe(Number.POSITIVE_INFINITY)
  })
})
