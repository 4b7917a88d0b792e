import {
  adaptiveReserveMs,
  MIN_RESERVE_MS,
  recordAnswerLateness,
  resetTimerLateness,
} from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { recordTimerLateness } from '../src/timerLateness.js'

afterEach(() => resetTimerLateness())

/**
 * Every read is synchronous: the event-loop monitor takes no sample, so
 * only the samples given here count. The monitor is started 2 s before t0
 * so the first read at t0 closes a window.
 */
function start(): number {
  resetTimerLateness()
  const t0 = performance.now() + 10_000
  adaptiveReserveMs(t0 - 2000)
  return t0
}

describe('one stall is one sample, however many timers it made late', () => {
  it('five deadlines due inside one 300 ms stall do not raise the reserve', () => {
    const t0 = start()
    // Due at t0-280 … t0-200, all fired when the stall ended, at t0.
    for (const [i, ms] of [280, 260, 240, 220, 200].entries())
      recordTimerLateness(ms, t0 + i * 0.01)
    expect(adaptiveReserveMs(t0 + 1)).toBe(MIN_RESERVE_MS)
  })

  it('five 504s flushed at the end of one stall do not raise the reserve', () => {
    const t0 = start()
    for (const [i, ms] of [280, 260, 240, 220, 200].entries())
      recordAnswerLateness(ms, t0 + i * 0.01)
    expect(adaptiveReserveMs(t0 + 1)).toBe(MIN_RESERVE_MS)
  })

  it('two stalls a second apart still count in full', () => {
    const t0 = start()
    recordTimerLateness(80, t0)
    recordTimerLateness(70, t0 + 0.01) // same stall as the first
    recordTimerLateness(80, t0 + 1000) // due at t0 + 920: a stall of its own
    expect(adaptiveReserveMs(t0 + 1001)).toBe(100) // 2 × 80 + 2, capped
    const t1 = t0 + 5000
    recordAnswerLateness(40, t1)
    recordAnswerLateness(40, t1 + 500)
    expect(adaptiveReserveMs(t1 + 501)).toBeGreaterThanOrEqual(40 + 2)
  })
})
