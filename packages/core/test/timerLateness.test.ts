import {
  adaptiveReserveMs,
  MIN_RESERVE_MS,
  recordAnswerLateness,
  resetTimerLateness,
  SAMPLE_MAX_AGE_MS,
  timerLatenessMs,
} from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'

afterEach(() => resetTimerLateness())

/** The reserve the timer lateness alone gives at `now` (no answer samples). */
function fromTimersAlone(now: number): number {
  return Math.max(MIN_RESERVE_MS, Math.ceil(2 * timerLatenessMs(now) + 2))
}

describe('adaptive reserve: the samples it learns from', () => {
  it('a late answer raises the reserve for a minute, then no longer counts', () => {
    resetTimerLateness()
    const t0 = performance.now()
    adaptiveReserveMs(t0) // starts the monitor
    recordAnswerLateness(80, t0)
    expect(adaptiveReserveMs(t0 + 1)).toBeGreaterThanOrEqual(82)
    // Still counted just before the minute is over (re-read after a second).
    expect(adaptiveReserveMs(t0 + SAMPLE_MAX_AGE_MS - 1)).toBeGreaterThanOrEqual(82)
    // A minute later no timeout has happened: the burst no longer counts.
    const later = t0 + 61_001
    const aged = adaptiveReserveMs(later)
    expect(aged).toBe(fromTimersAlone(later))
    expect(aged).toBeLessThan(82)
  })

  it('a new late answer is counted on the next read, without waiting for the second', () => {
    resetTimerLateness()
    const t0 = performance.now()
    const before = adaptiveReserveMs(t0)
    recordAnswerLateness(60, t0 + 1)
    expect(adaptiveReserveMs(t0 + 2)).toBeGreaterThanOrEqual(62)
    expect(before).toBeLessThan(62)
  })

  it('resetTimerLateness forgets every sample, as in a new process', () => {
    const t0 = performance.now()
    adaptiveReserveMs(t0)
    recordAnswerLateness(90, t0)
    expect(adaptiveReserveMs(t0 + 1)).toBeGreaterThanOrEqual(92)
    resetTimerLateness()
    expect(adaptiveReserveMs(t0 + 2)).toBe(MIN_RESERVE_MS)
  })
})
