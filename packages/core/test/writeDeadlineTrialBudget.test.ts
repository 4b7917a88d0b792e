import { Deadline, ManualClock, writeDeadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

// An observe-only deadline whose time had passed wrote nothing, whatever
// was above it. Under an enforcing parent — a budget on trial inside an
// enforced request, `req.deadline.child(100, { observe: true })`, as core's
// README describes it — the work goes on under the request's deadline, but
// the next hop heard of none and took its own default budget: 30 s for a
// request with 850 ms left. It is now bounded by what is above it.

describe('writeDeadline for an observe-only deadline whose time has passed', () => {
  it('under an enforcing parent, writes what the parent has left', () => {
    const clock = new ManualClock()
    using request = Deadline.after(1000, { clock })
    using trial = request.child(100, { observe: true })
    clock.advance(40)
    // Its own (trial) budget while it lasts, as before.
    expect(writeDeadline({}, trial)).toBe(60)
    clock.advance(110)
    const headers: Record<string, string> = {}
    expect(writeDeadline(headers, trial)).toBe(850)
    expect(headers).toEqual({ 'x-deadline-remaining-ms': '850' })
    // Never more than the request itself would send.
    expect(writeDeadline({}, trial)).toBe(writeDeadline({}, request))
  })

  it('under less than a whole ms of its own, too', () => {
    const clock = new ManualClock()
    using request = Deadline.after(1000, { clock })
    using trial = request.child(100.5, { observe: true })
    clock.advance(100)
    expect(writeDeadline({}, trial)).toBe(900)
  })

  it('past observe-only ancestors with no time either, up to the first that bounds it', () => {
    const clock = new ManualClock()
    using request = Deadline.after(1000, { clock })
    using outer = request.child(200, { observe: true })
    using inner = outer.child(100)
    clock.advance(300)
    expect(inner.observe).toBe(true)
    expect(writeDeadline({}, inner)).toBe(700)
    // An observe-only ancestor that still has time is what dark mode sends on.
    using dark = Deadline.after(1000, { clock, observe: true })
    using short = dark.child(100)
    clock.advance(150)
    expect(writeDeadline({}, short)).toBe(850)
  })

  it('once the enforcing parent is past its time too, 0, as for the parent', () => {
    const clock = new ManualClock()
    using request = Deadline.after(100, { clock })
    using trial = request.child(50, { observe: true })
    clock.advance(100)
    // The parent's expiry cancelled the trial with its reason: over.
    expect(trial.done).toBe(true)
    expect(writeDeadline({}, trial)).toBe(0)
  })

  it('unchanged: with nothing above it that bounds it, nothing; disposed, nothing', () => {
    const clock = new ManualClock()
    using alone = Deadline.after(100, { clock, observe: true })
    using underNever = Deadline.never({ clock }).child(100, { observe: true })
    using request = Deadline.after(1000, { clock })
    const optedOut = request.child(100, { observe: true })
    clock.advance(150)
    expect(writeDeadline({}, alone)).toBeUndefined()
    expect(writeDeadline({}, underNever)).toBeUndefined()
    // Disposed while live, it no longer expires: follow-up work, sent with no deadline.
    const disposed = request.child(500, { observe: true })
    disposed.dispose()
    expect(writeDeadline({}, disposed)).toBeUndefined()
    optedOut.dispose()
    // Disposed after its time passed it keeps its end, and is bounded as before.
    expect(writeDeadline({}, optedOut)).toBe(850)
  })
})
