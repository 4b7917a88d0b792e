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
 * the first read after a window of about 1 s ends (what this test is about
 * is that window, so it waits it out).
 */
async function nextWindow(): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 1100))
  return timerLatenessMs()
}

// One file, one process: the lateness figures are process-wide.
describe('timer lateness is learned on clocks that run on real time', () => {
  it('a clock that moves when told teaches nothing; one that delegates to the system clock and says realTime does', async () => {
    timerLatenessMs() // starts the monitor and the first window

    // Timers 40 ms late, on a clock that does not say it runs on real time.
    await expireOn(lateClock(40, false), 64, 5)
    expect(await nextWindow()).toBeLessThan(20)

    // The same lateness on a wrapper of the system clock that says so.
    await expireOn(lateClock(40, true), 64, 5)
    expect(await nextWindow()).toBeGreaterThanOrEqual(35)
  }, 20_000)
})
