import { describe, expect, it } from 'vitest'
import { Deadline } from '../src/Deadline.js'
import { ManualClock } from '../src/ManualClock.js'
import { writeDeadline } from '../src/writeDeadline.js'

describe('writeDeadline: an observe-only deadline within a millisecond of its end', () => {
  it('writes nothing (a "0" made the next, enforcing, hop answer 504 at once); an enforcing one writes 0', () => {
    const clock = new ManualClock()
    const observing = Deadline.after(10, { clock, observe: true })
    const enforcing = Deadline.after(10, { clock })
    clock.advance(9.5)
    const dark: Record<string, string> = {}
    expect(writeDeadline(dark, observing)).toBeUndefined()
    expect(dark).toEqual({})
    const enforced: Record<string, string> = {}
    expect(writeDeadline(enforced, enforcing)).toBe(0)
    expect(enforced).toEqual({ 'x-deadline-remaining-ms': '0' })
    // A whole millisecond left is still sent.
    const later = Deadline.after(10, { clock, observe: true })
    clock.advance(9)
    expect(writeDeadline({}, later)).toBe(1)
    observing.dispose()
    enforcing.dispose()
    later.dispose()
  })
})
