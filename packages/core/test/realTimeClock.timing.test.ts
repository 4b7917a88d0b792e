import { type Clock, Deadline, systemClock, timerLatenessMs } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/** The system clock, with every timer firing `lateMs` late (as on a busy loop). */
function lateClock(lateMs: number, realTime: boolean): Clock {
  return {
    realTime,
    now: () => systemClock.now(),
    setTimeout: (callback, ms, options) => systemClock.setTimeout(callback, ms + lateMs, options),
    clearTimeout: (handle) => systemClock.clearTimeout(handle),
  }
}

/** Let `count` deadlines of `ms` on `clock` expire; resolves when the last has. */
async function expireOn(clock: Clock, count: number, ms: number): Promise<void> {
  await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<void>((resolve) => {
          Deadline.after(ms, { clock, onExpire: () => resolve() })
        }),
    ),
  )
}

/**
 * The lateness figure once the current window is over: it is worked out on
 * the first read after a window of about 1 s ends. `timerLatenessMs(now)`
 * takes the time it is read at, so the read is made 1.1 s later on that
 * clock instead of after waiting 1.1 s: the window, the samples (taken at
 * real times, each under a minute old on this clock too) and the rule that
 * closes the window are the same; only the wait is gone.
 */
let aheadMs = 0
function nextWindow(): number {
  aheadMs += 1100
  return timerLatenessMs(performance.now() + aheadMs)
}

// One file, one process: the lateness figures are process-wide.
describe('timer lateness is learned on clocks that run on real time', () => {
  it('a clock that moves when told teaches nothing; one that delegates to the system clock and says realTime does', async () => {
    timerLatenessMs() // starts the monitor and the first window

    // Timers 40 ms late, on a clock that does not say it runs on real time.
    await expireOn(lateClock(40, false), 64, 5)
    expect(nextWindow()).toBeLessThan(20)

    // The same lateness on a wrapper of the system clock that says so.
    await expireOn(lateClock(40, true), 64, 5)
    expect(nextWindow()).toBeGreaterThanOrEqual(35)
  }, 20_000)
})
