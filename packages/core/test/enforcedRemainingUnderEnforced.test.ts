import { Deadline, enforcedRemaining, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

// enforcedRemaining is what the retry, wait and admission decisions of
// fetch and llm plan with. An observe-only deadline read as Infinity there,
// also one under an enforcing parent — a budget on trial inside an
// enforced request — which that parent ends when it expires: a retry
// waited out a Retry-After the request could never see the end of, and
// failed at the request's deadline where the answer in hand (the 503) was
// the caller's to read at once. Such a deadline is bounded by its parent.

describe('enforcedRemaining', () => {
  it('an observe-only deadline under an enforcing one plans with what that one has left', () => {
    const clock = new ManualClock()
    using request = Deadline.after(500, { clock })
    using trial = request.child(100, { observe: true })
    clock.advance(20)
    expect(enforcedRemaining(trial)).toBe(480)
    clock.advance(200) // the trial's own time is over, observed
    expect(enforcedRemaining(trial)).toBe(280)
    // Through observe-only deadlines between them too.
    using inner = trial.child(50)
    expect(inner.observe).toBe(true)
    expect(enforcedRemaining(inner)).toBe(280)
  })

  it('unchanged: an enforcing deadline plans with its own time; dark mode alone, or none, with Infinity', () => {
    const clock = new ManualClock()
    using request = Deadline.after(500, { clock })
    using step = request.child(100)
    clock.advance(20)
    expect(enforcedRemaining(step)).toBe(80)
    expect(enforcedRemaining(request)).toBe(480)
    using dark = Deadline.after(500, { clock, observe: true })
    using darkStep = dark.child(100)
    expect(enforcedRemaining(dark)).toBe(Number.POSITIVE_INFINITY)
    expect(enforcedRemaining(darkStep)).toBe(Number.POSITIVE_INFINITY)
    expect(enforcedRemaining(undefined)).toBe(Number.POSITIVE_INFINITY)
    // An enforcing child of an observe-only parent enforces its own time.
    using enforced = dark.child(100, { observe: false })
    expect(enforcedRemaining(enforced)).toBe(100)
  })
})
