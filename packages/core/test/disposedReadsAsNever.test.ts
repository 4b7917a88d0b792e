import { Deadline, ManualClock, writeDeadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/**
 * README: a deadline disposed while live never expires, and reads so
 * everywhere that asks it. `remaining()` and `expired` still read the old
 * expiry: a gRPC handler that disposed its deadline to go on after its
 * answer had its fetch refused ("209 ms elapsed of a 100 ms budget") and its
 * gRPC call not sent, and `writeDeadline` wrote `0`, which the next hop
 * refuses at once.
 */
describe('a deadline disposed while live reads as one that never expires', () => {
  it('remaining() is Infinity, expired false, expiresAt Infinity, past its old expiry', () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(100, { clock })
    deadline.dispose()
    clock.advance(200)
    expect(deadline.remaining()).toBe(Number.POSITIVE_INFINITY)
    expect(deadline.expired).toBe(false)
    expect(deadline.expiresAt).toBe(Number.POSITIVE_INFINITY)
    expect(deadline.done).toBe(false)
    // What it allowed at creation stays.
    expect(deadline.budgetMs).toBe(100)
  })

  it('writeDeadline writes no header for it, before or after its old expiry', () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(100, { clock })
    deadline.dispose()
    const before: Record<string, string> = {}
    expect(writeDeadline(before, deadline)).toBeUndefined()
    expect(before).toEqual({})
    clock.advance(200)
    const after: Record<string, string> = {}
    expect(writeDeadline(after, deadline)).toBeUndefined()
    expect(after).toEqual({})
  })

  it('a cancel after the dispose still ends it, and writeDeadline writes 0 for that', () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(100, { clock })
    deadline.dispose()
    deadline.cancel(new Error('client left'))
    const headers: Record<string, string> = {}
    expect(writeDeadline(headers, deadline)).toBe(0)
  })

  it('disposed once it had expired, it keeps its end', () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(100, { clock })
    clock.advance(100)
    expect(deadline.expired).toBe(true)
    deadline.dispose()
    expect(deadline.expired).toBe(true)
    expect(deadline.remaining()).toBe(0)
    expect(deadline.expiresAt).toBe(100)
  })

  it('disposed once its time is up, its timer not yet run (a busy loop), it keeps reading expired', () => {
    // A clock whose timers never fire: the time passes, the expiry timer is late.
    let now = 0
    const clock = { now: () => now, setTimeout: () => ({}), clearTimeout: () => {} }
    const deadline = Deadline.after(100, { clock })
    now = 150
    deadline.dispose()
    expect(deadline.expired).toBe(true)
    expect(deadline.remaining()).toBe(0)
    expect(deadline.expiresAt).toBe(100)
  })
})
