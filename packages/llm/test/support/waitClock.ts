import { ManualClock, type TimerOptions } from '@hourglass/core'
import {
  type LimitedProvider,
  type LimitedProviderOptions,
  startLimitedProvider,
} from '../admission/support/limitedProvider.js'

/**
 * A `ManualClock` that tells its waits from its other timers: core's `wait`
 * (every back-off, cooldown, rate-limit window, stagger and pacing delay)
 * arms its timers with `keepAlive`; deadlines and phase timers do not.
 */
export class WaitClock extends ManualClock {
  /** Timers armed and not yet fired or cleared: handle → when it fires. */
  readonly #timers = new Map<unknown, number>()
  /** Which of them are waits. */
  readonly #waits = new Set<unknown>()
  readonly #listeners = new Set<() => void>()

  override setTimeout(callback: () => void, ms: number, options?: TimerOptions): unknown {
    const handle = super.setTimeout(() => {
      this.#timers.delete(handle)
      if (this.#waits.delete(handle)) this.#changed()
      callback()
    }, ms)
    this.#timers.set(handle, this.now() + Math.max(0, ms))
    if (options?.keepAlive === true) {
      this.#waits.add(handle)
      this.#changed()
    }
    return handle
  }

  override clearTimeout(handle: unknown): void {
    super.clearTimeout(handle)
    this.#timers.delete(handle)
    if (this.#waits.delete(handle)) this.#changed()
  }

  /** Waits in progress. */
  get pendingWaits(): number {
    return this.#waits.size
  }

  /** When the next timer of any kind fires (undefined: none). */
  nextTimerAt(): number | undefined {
    let first: number | undefined
    for (const at of this.#timers.values()) if (first === undefined || at < first) first = at
    return first
  }

  /** Calls `listener` whenever a wait is armed, ends or is cleared; returns the unsubscribe. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  #changed(): void {
    for (const listener of [...this.#listeners]) listener()
  }
}

/**
 * Runs `work` to the end with time passing on `clock` only: whenever every
 * piece of it still running is held by a wait on the clock (one each: its
 * own, or the fake server's it is waiting on), the clock moves to its next
 * timer (that wait's end, or a deadline or phase timer before it). Nothing
 * else moves it — loopback I/O takes no time on it — so the times the work
 * sees are the waits it asked for, not how late a busy machine ran them.
 */
export function drive<T>(
  clock: WaitClock,
  work: ReadonlyArray<Promise<T>>,
): Promise<PromiseSettledResult<T>[]> {
  return new Promise((resolve) => {
    const results: PromiseSettledResult<T>[] = new Array(work.length)
    let running = work.length
    let scheduled = false
    const check = () => {
      scheduled = false
      if (running === 0) {
        off()
        resolve(results)
        return
      }
      const next = clock.nextTimerAt()
      if (next === undefined || clock.pendingWaits !== running) return
      clock.advance(Math.max(0, next - clock.now()))
      // The clock adds the step back to its now: from 0.2 to 0.9 it lands on
      // 0.8999999999999999, a float step short of the timer (a ManualClock
      // fires a fractional wait at its very end). Once more lands on it.
      if (clock.now() < next) clock.advance(next - clock.now())
      // A timer that fired a float step short of its end and re-armed for
      // that step (a deadline's: it changes no wait, so nothing would look
      // again) is due within a few float steps of `next`: fire it now. Never
      // on to a later timer here: once a timer fired, the work may be doing
      // loopback I/O, which takes no time on this clock (a fallback's call
      // after a headers timeout read 1850 ms of latency when it did).
      const slack = 4 * Number.EPSILON * Math.max(1, Math.abs(next))
      for (
        let at = clock.nextTimerAt();
        at !== undefined && at <= next + slack;
        at = clock.nextTimerAt()
      ) {
        clock.advance(Math.max(0, at - clock.now()))
      }
    }
    // After the I/O and promise callbacks already due: checked on a settled state.
    const schedule = () => {
      if (scheduled) return
      scheduled = true
      setImmediate(check)
    }
    const off = clock.onChange(schedule)
    work.forEach((promise, i) => {
      promise
        .then(
          (value) => {
            results[i] = { status: 'fulfilled', value }
          },
          (reason: unknown) => {
            results[i] = { status: 'rejected', reason }
          },
        )
        .finally(() => {
          running--
          schedule()
        })
    })
    schedule()
  })
}

/** Waits `ms` on `clock` (a wait `drive` counts): arrival spacing in a load shape. */
export function pause(clock: WaitClock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms, { keepAlive: true }))
}

/**
 * `startLimitedProvider` (admission/support) with its window, its answer
 * time and its records' `at` on `clock`: the same 429s with `retry-after`
 * while the window of a limited key is open, 200 after `latencyMs` otherwise.
 */
export function startLimitedProviderOn(
  clock: WaitClock,
  options: LimitedProviderOptions,
): Promise<LimitedProvider> {
  return startLimitedProvider({
    ...options,
    time: {
      now: () => clock.now(),
      after: (ms, callback) => {
        void pause(clock, ms).then(callback)
      },
    },
  })
}

/** `drive` for one call: settles as it does. */
export async function driveOne<T>(clock: WaitClock, call: Promise<T>): Promise<T> {
  const [settled] = await drive(clock, [call])
  if (settled?.status !== 'fulfilled') throw settled?.reason
  return settled.value
}
