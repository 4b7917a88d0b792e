import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

describe('Deadline.ownsSignal', () => {
  it('is true for the deadline’s own signal only, and asking makes no signal', () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(100, { clock })
    const other = new AbortController().signal
    // Before anyone read `signal`: nothing is its own, and asking made nothing.
    expect(deadline.ownsSignal(other)).toBe(false)
    const own = deadline.signal
    expect(deadline.ownsSignal(own)).toBe(true)
    expect(deadline.ownsSignal(other)).toBe(false)
    expect(Deadline.after(100, { clock }).ownsSignal(own)).toBe(false)
    // The same signal is handed out afterwards: asking did not replace it.
    expect(deadline.signal).toBe(own)
    deadline.dispose()
  })
})
