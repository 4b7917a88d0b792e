import { Deadline, isExpiryOf, ManualClock, writeDeadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

// `null` reads as none for every option of a deadline (signal, clock, name,
// hooks, observe): `parent` too. It crashed with "Cannot read properties of
// null (reading 'expiresAt')", naming no option — `{ parent: req.deadline
// ?? null }` from code with no request made no deadline at all.
describe('Deadline.after with parent: null', () => {
  it('is a deadline of its own, with no parent', () => {
    const clock = new ManualClock()
    const d = Deadline.after(100, { parent: null as unknown as undefined, clock })
    expect(d.parent).toBeUndefined()
    expect(d.expiresAt).toBe(100)
    const headers: Record<string, string> = {}
    expect(writeDeadline(headers, d)).toBe(100)
    clock.advance(100)
    expect(d.expired).toBe(true)
    expect(isExpiryOf(d.reason, d)).toBe(true)
  })

  it('never() given one reads it as none too', () => {
    const d = Deadline.never({ parent: null } as never)
    expect(d.parent).toBeUndefined()
    expect(d.remaining()).toBe(Number.POSITIVE_INFINITY)
    d.cancel(new Error('stop'))
    expect(d.done).toBe(true)
  })
})
