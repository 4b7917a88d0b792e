import { adaptiveReserveMs, MAX_RESERVE_MS, MIN_RESERVE_MS, timerLatenessMs } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/** Keep the event loop busy for `ms` (what a CPU-bound handler does to every timer). */
function block(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {}
}

/**
 * Let timers run for `ms` while blocking the loop `blockMs` out of every
 * `everyMs`, then once more: the monitor's timer records a block's delay
 * when it next fires, so the last block counts only after a further wait.
 */
async function busyFor(ms: number, blockMs: number, everyMs: number): Promise<void> {
  const wait = () => new Promise((resolve) => setTimeout(resolve, everyMs - blockMs))
  const end = performance.now() + ms
  while (performance.now() < end) {
    await wait()
    if (blockMs > 0) block(blockMs)
  }
  await wait()
}

/**
 * The figures are read at the end of each phase as if the monitor's ~1 s
 * window had run out then: `timerLatenessMs(now)` and `adaptiveReserveMs(now)`
 * take the time they are read at, and each read is made a window further on
 * that clock. The window's rule (closed on the first read ≥ 1 s after it
 * opened, its samples then dropped) is the same; the samples are the loop's
 * real delays over the phase (100 ms: 2 blocks of 40 ms, or 1 of 300 ms —
 * the p99 is the longest of them, as over 1.2 s: a blocked loop takes few
 * samples, and they are the long ones); only the wait for the rest of each
 * window is gone (3.6 s of real time before).
 */
let aheadMs = 0
const windowEnd = () => {
  aheadMs += 1000
  return performance.now() + aheadMs
}

describe('adaptive reserve', () => {
  it('never less than the old fixed 10 ms, grows with the timer lateness the process sees, and stays within 10–100 ms', async () => {
    timerLatenessMs(performance.now()) // starts the monitor and its first window
    await busyFor(100, 0, 20)
    const quiet = adaptiveReserveMs(windowEnd())
    expect(quiet).toBeGreaterThanOrEqual(MIN_RESERVE_MS)

    // A loop blocked 40 ms out of every 50: timers run up to ~40 ms late.
    await busyFor(100, 40, 50)
    const busyAt = windowEnd()
    const busy = adaptiveReserveMs(busyAt)
    expect(timerLatenessMs(busyAt)).toBeGreaterThan(20)
    expect(busy).toBeGreaterThan(20)
    expect(busy).toBeGreaterThan(quiet)
    expect(busy).toBeLessThanOrEqual(MAX_RESERVE_MS)

    // A loop blocked 300 ms: the reserve stops at its ceiling.
    await busyFor(300, 300, 310)
    expect(adaptiveReserveMs(windowEnd())).toBe(MAX_RESERVE_MS)
  }, 20_000)
})
