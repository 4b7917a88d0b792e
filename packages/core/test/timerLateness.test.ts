import {
  adaptiveReserveMs,
  MIN_RESERVE_MS,
  recordAnswerLateness,
  resetTimerLateness,
  SAMPLE_MAX_AGE_MS,
  timerLatenessMs,
} from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { recordTimerLateness } from '../src/timerLateness.js'

afterEach(() => resetTimerLateness())

/** The reserve the timer lateness alone gives at `now` (no answer samples). */
function fromTimersAlone(now: number): number {
  return Math.max(MIN_RESERVE_MS, Math.ceil(2 * timerLatenessMs(now) + 2))
}

describe('adaptive reserve: the samples it learns from', () => {
  it('late answers raise the reserve for a minute, then no longer count', () => {
    resetTimerLateness()
    const t0 = performance.now()
    adaptiveReserveMs(t0) // starts the monitor
    recordAnswerLateness(80, t0)
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
    recordAnswerLateness(60, t0)
    const before = adaptiveReserveMs(t0)
    recordAnswerLateness(60, t0 + 1)
    expect(adaptiveReserveMs(t0 + 2)).toBeGreaterThanOrEqual(62)
    expect(before).toBeLessThan(62)
  })

  it('resetTimerLateness forgets every sample, as in a new process', () => {
    const t0 = performance.now()
    adaptiveReserveMs(t0)
    recordAnswerLateness(90, t0)
    recordAnswerLateness(90, t0)
    expect(adaptiveReserveMs(t0 + 1)).toBeGreaterThanOrEqual(92)
    resetTimerLateness()
    expect(adaptiveReserveMs(t0 + 2)).toBe(MIN_RESERVE_MS)
  })
})

/**
 * Exact figures: every read below is made synchronously, so the event-loop
 * monitor has taken no sample (its timer runs on the loop) and the loop's
 * share of the timer lateness is 0; only the samples given here count.
 */
describe('adaptive reserve: one outlier never sets it', () => {
  /** The reserve after these answer samples (no timer lateness: read within the monitor's first window). */
  function reserveAfterAnswers(samples: readonly number[]): number {
    resetTimerLateness()
    const t0 = performance.now()
    adaptiveReserveMs(t0) // starts the monitor: lateness 0 until its first window closes
    for (const ms of samples) recordAnswerLateness(ms, t0)
    return adaptiveReserveMs(t0 + 1)
  }

  /** The timer lateness after these timer samples (the loop monitor's window holds none). */
  function latenessAfterTimers(samples: readonly number[]): number {
    resetTimerLateness()
    const t0 = performance.now()
    timerLatenessMs(t0) // starts the monitor and its window
    for (const ms of samples) recordTimerLateness(ms, t0)
    // The window closes: read the samples. A ms past it: for about 1 in 400
    // values of t0, (t0 + 1000) - t0 is 999.9999999999 in floating point, the
    // window stayed open, and the read was 0 (a test that failed by chance).
    return timerLatenessMs(t0 + 1001)
  }

  const ones = (n: number) => Array.from({ length: n }, () => 1)

  it('one sample alone reads 0: one late answer leaves the reserve at its floor', () => {
    expect(reserveAfterAnswers([90])).toBe(MIN_RESERVE_MS)
  })

  it('two samples read the smaller', () => {
    expect(reserveAfterAnswers([90, 40])).toBe(42)
    expect(reserveAfterAnswers([40, 90])).toBe(42)
  })

  it('lateness seen twice counts in full', () => {
    expect(reserveAfterAnswers([90, 90])).toBe(92)
    expect(reserveAfterAnswers([1, 90, 1, 90])).toBe(92)
  })

  it('64 samples (a full ring) read the largest but one', () => {
    // The tester's check: one 90 ms stall among 63 answers 1 ms late read 92 ms.
    expect(reserveAfterAnswers([90, ...ones(63)])).toBe(MIN_RESERVE_MS)
    expect(reserveAfterAnswers([...ones(31), 90, ...ones(31), 70])).toBe(72)
  })

  it('of 200 samples only the last 64 count, and of them the largest but one', () => {
    // 136 answers 99 ms late, then 64 answers 1, 2, …, 64 ms late.
    const last64 = Array.from({ length: 64 }, (_, i) => i + 1)
    expect(reserveAfterAnswers([...Array.from({ length: 136 }, () => 99), ...last64])).toBe(65)
  })

  it('a sample older than a minute does not count as the second one', () => {
    resetTimerLateness()
    const t0 = performance.now()
    adaptiveReserveMs(t0)
    recordAnswerLateness(80, t0 - SAMPLE_MAX_AGE_MS - 1)
    recordAnswerLateness(80, t0)
    expect(adaptiveReserveMs(t0 + 1)).toBe(MIN_RESERVE_MS)
  })

  it("the deadlines' own timers follow the same rule", () => {
    expect(latenessAfterTimers([90])).toBe(0)
    expect(latenessAfterTimers([90, 40])).toBe(40)
    expect(latenessAfterTimers([90, 90])).toBe(90)
    expect(latenessAfterTimers([90, ...ones(63)])).toBe(1)
  })
})
