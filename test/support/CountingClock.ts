import { type Clock, systemClock, type TimerOptions } from '@hourglass/core'

/**
 * The system clock, counting the timers that are armed and not yet fired or
 * cleared. Deadline and phase timers are unref'd, so
 * `process.getActiveResourcesInfo()` cannot see them; this can.
 */
export class CountingClock implements Clock {
  /** It delegates to the system clock: its lateness is this process's (the adaptive reserve learns from it). */
  readonly realTime = true
  readonly #live = new Set<unknown>()
  /** Timers armed since creation. */
  armed = 0

  get pending(): number {
    return this.#live.size
  }

  now(): number {
    return systemClock.now()
  }

  setTimeout(callback: () => void, ms: number, options?: TimerOptions): unknown {
    this.armed++
    const handle: unknown = systemClock.setTimeout(
      () => {
        this.#live.delete(handle)
        callback()
      },
      ms,
      options,
    )
    this.#live.add(handle)
    return handle
  }

  clearTimeout(handle: unknown): void {
    systemClock.clearTimeout(handle)
    this.#live.delete(handle)
  }
}
