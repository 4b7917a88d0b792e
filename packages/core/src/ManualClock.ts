import type { Clock } from './clock.js'

interface PendingTimer {
  at: number
  seq: number
  callback: () => void
}

/**
 * A clock that moves only when told to. `advance(ms)` fires every timer that
 * falls due, in order, synchronously — tests assert on what happened without
 * sleeping.
 */
export class ManualClock implements Clock {
  #now: number
  #seq = 0
  readonly #timers = new Map<number, PendingTimer>()

  constructor(startMs = 0) {
    this.#now = startMs
  }

  now(): number {
    return this.#now
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const seq = ++this.#seq
    this.#timers.set(seq, { at: this.#now + Math.max(0, ms), seq, callback })
    return seq
  }

  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number)
  }

  /** Timers scheduled and not yet fired or cleared — a leak check. */
  get pendingTimers(): number {
    return this.#timers.size
  }

  /** Move time forward, firing due timers in order (including ones they schedule). */
  advance(ms: number): void {
    // A negative step ran the "monotonic" clock backwards; NaN (or Infinity)
    // left it reading NaN for good, and every deadline made on it after that.
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
      throw new RangeError(`advance expects a finite number of ms ≥ 0, got ${String(ms)}`)
    }
    const target = this.#now + ms
    for (;;) {
      let next: PendingTimer | undefined
      for (const timer of this.#timers.values()) {
        if (
          timer.at <= target &&
          (!next || timer.at < next.at || (timer.at === next.at && timer.seq < next.seq))
        ) {
          next = timer
        }
      }
      if (!next) break
      this.#timers.delete(next.seq)
      this.#now = Math.max(this.#now, next.at)
      next.callback()
    }
    // A timer's callback may itself advance past `target` (a test helper that
    // drives time from inside a callback): setting `target` then moved the
    // monotonic clock backwards.
    this.#now = Math.max(this.#now, target)
  }
}
