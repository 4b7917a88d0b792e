import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

// A chain of nested children (each made under the one before, as a recursive
// step that makes a child of `currentDeadline()` does) ends as a flat family
// does: every deadline in it, whatever the depth, and nothing thrown.
const DEPTH = 10_000

function chain(root: Deadline): Deadline[] {
  const all = [root]
  for (let i = 0; i < DEPTH; i++) all.push(all[all.length - 1]!.child())
  return all
}

describe('a deep chain of child deadlines', () => {
  it('is cancelled whole by cancelling its root', () => {
    const all = chain(Deadline.after(60_000))
    const reason = new Error('client left')
    expect(() => all[0]!.cancel(reason)).not.toThrow()
    expect(all.every((d) => d.done && d.reason === reason)).toBe(true)
  })

  it('expires whole when its root runs out (the timer path)', () => {
    const clock = new ManualClock()
    const all = chain(Deadline.after(1000, { clock }))
    expect(() => clock.advance(1000)).not.toThrow()
    expect(all.every((d) => d.expired)).toBe(true)
  })

  it('expires whole when a deadline deep in it is the first to see the time passed', () => {
    // A clock whose timers have not run yet (a busy event loop): the deadline
    // that looks first expires its due ancestors first, then their children.
    let now = 0
    const clock = { now: () => now, setTimeout: () => ({}), clearTimeout: () => {} }
    const all = chain(Deadline.after(1000, { clock }))
    now = 1000
    expect(() => all[all.length - 1]!.child(5)).not.toThrow()
    expect(all.every((d) => d.expired)).toBe(true)
  })

  it('expires whole under an observe-only root: every deadline observed expired, none aborted', () => {
    const clock = new ManualClock()
    const all = chain(Deadline.after(1000, { clock, observe: true }))
    expect(() => clock.advance(1000)).not.toThrow()
    expect(all.every((d) => d.expired && !d.signal.aborted)).toBe(true)
    // Kept for a later cancel, which still reaches the whole chain.
    const reason = new Error('client left')
    expect(() => all[0]!.cancel(reason)).not.toThrow()
    expect(all.every((d) => d.reason === reason)).toBe(true)
  })

  it('an observe-only chain under an enforcing root is expired, then cancelled with its reason', () => {
    const clock = new ManualClock()
    const root = Deadline.after(1000, { clock })
    const all = chain(root.child(undefined, { observe: true }))
    expect(() => clock.advance(1000)).not.toThrow()
    expect(root.expired).toBe(true)
    expect(all.every((d) => d.done && d.reason === root.reason)).toBe(true)
  })
})
