import { adaptiveReserveMs, MAX_RESERVE_MS, MIN_RESERVE_MS, timerLatenessMs } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/** Keep the event loop busy for `ms` (what a CPU-bound handler does to every timer). */
function block(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {}
}

/** Let timers run for `ms` while blocking the loop `blockMs` out of every `everyMs`. */
async function busyFor(ms: number, blockMs: number, everyMs: number): Promise<void> {
  const end = performance.now() + ms
  while (performance.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, everyMs - blockMs))
    if (blockMs > 0) block(blockMs)
  }
}

describe('adaptive reserve', () => {
  it('never less than the old fixed 10 ms, grows with the timer lateness the process sees, and stays within 10–100 ms', async () => {
    timerLatenessMs() // starts the monitor
    await busyFor(1200, 0, 20)
    const quiet = adaptiveReserveMs()
    expect(quiet).toBeGreaterThanOrEqual(MIN_RESERVE_MS)

    // A loop blocked 40 ms out of every 50: timers run up to ~40 ms late.
    await busyFor(1200, 40, 50)
    const busy = adaptiveReserveMs()
    expect(timerLatenessMs()).toBeGreaterThan(20)
    expect(busy).toBeGreaterThan(20)
    expect(busy).toBeGreaterThan(quiet)
    expect(busy).toBeLessThanOrEqual(MAX_RESERVE_MS)

    // A loop blocked 300 ms at a time: the reserve stops at its ceiling.
    await busyFor(1200, 300, 310)
    expect(adaptiveReserveMs()).toBe(MAX_RESERVE_MS)
  }, 20_000)
})
