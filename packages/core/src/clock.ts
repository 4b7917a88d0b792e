/**
 * Time as Hourglass sees it. `now()` is monotonic milliseconds (never
 * wall-clock: NTP steps must not stretch or shrink a budget). Inject your own
 * (see `ManualClock`) to drive time in tests without sleeping.
 */
export interface Clock {
  now(): number
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

/** Node's timers overflow above this and fire after 1 ms instead. */
export const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * The real clock: `performance.now()` and unref'd timers — a pending deadline
 * never keeps a process alive on its own, as with Node's own
 * `AbortSignal.timeout`.
 */
export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout(callback, ms) {
    const timer = setTimeout(callback, Math.min(Math.max(0, ms), MAX_TIMER_MS))
    timer.unref()
    return timer
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout)
  },
}
