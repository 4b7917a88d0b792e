import { type Clock, MAX_TIMER_MS, type TimerOptions } from './clock.js'
import { describeValue } from './describeValue.js'
import { optionError } from './optionError.js'

/**
 * @internal Schedule `callback` after `ms` (finite, > 2³¹−1) on a
 * ManualClock, whole: its `setTimeout` cuts such a delay to 2³¹−1 ms, as
 * Node's timers would, and a far deadline or wait re-armed in steps of it —
 * about 4.2 million timers fired to advance to Number.MAX_SAFE_INTEGER, a
 * second of CPU. A ManualClock's timers cannot overflow, so a `Deadline` and
 * `wait` ask for the whole delay here. The handle, as `setTimeout`'s;
 * `undefined` for any other clock (it steps). A `keepAlive` timer (a wait's,
 * which something awaits) is `undefined` too on a clock whose `setTimeout`
 * is not ManualClock's own: a subclass that overrides it to see the waits
 * armed on it (and drive time to the next one) must see this one, in steps.
 * Not exported from the package.
 */
export let wholeTimeout: (
  clock: unknown,
  callback: () => void,
  ms: number,
  options?: TimerOptions,
) => unknown

/**
 * @internal Whether `clock` is a ManualClock (a subclass too), whose timers
 * fire at the very time asked for, fractions included: a `Deadline` rounds
 * its timer's delay up to a whole ms on every other clock (Node truncates
 * fractions). Not exported from the package.
 */
export let firesExactly: (clock: unknown) => boolean

/**
 * @internal On a ManualClock, make the timer `handle`, just armed for
 * `at - now()`, due at `at` itself when it would be due after it. The clock
 * adds that delay back to its `now`, and the round trip can land one float
 * step past `at` (0.3 + (0.9 − 0.3) is 0.9000000000000001): a deadline
 * armed after its start (a child left to its own timer by a disposed
 * parent) then read `expired` at 0.9 while its timer had not fired — no
 * abort, no onExpire — until the next `advance`. A step short is left
 * alone: the timer fires, finds time left and re-arms for the last step;
 * moved later, a clock subclass that records the delay it was given (llm's
 * WaitClock, fetch's retry test) would report it due where it is not. A
 * driver that advances by `next - now()` can itself land a step short, and
 * advances once more (llm's `drive`). No float delay lands every `at`
 * exactly (0.3 → 0.9 has none): hence this move. Only a timer armed
 * for exactly that delay moves (a subclass that passed on another delay
 * keeps its own); a no-op on any other clock. Not exported from the package.
 */
export let dueAt: (clock: unknown, handle: unknown, at: number) => void

interface PendingTimer {
  handle: object
  at: number
  seq: number
  callback: () => void
}

/**
 * A clock that moves only when told to. `advance(ms)` fires every timer that
 * falls due, in order, synchronously — tests assert on what happened without
 * sleeping.
 *
 * Timers due in one `advance` run back to back (by due time, then by
 * creation), with no microtask checkpoint between them, where Node runs the
 * microtask queue after each of its own: a promise reaction one timer's
 * callback queues (p-timeout clearing its timer once the race is settled)
 * runs after `advance` returns, not before the next timer. It cannot do
 * otherwise and stay synchronous — JavaScript has no way to drain the
 * microtask queue from inside a call — and code under test should not rely
 * on a checkpoint between two timers due together anyway. A test that wants
 * one advances to the first timer, awaits, then advances again.
 */
export class ManualClock implements Clock {
  #now: number
  #seq = 0
  readonly #timers = new Map<object, PendingTimer>()

  constructor(startMs = 0) {
    // NaN (or a string) made every deadline on this clock throw "clock.now()
    // must return a number" at creation, far from the cause. A string is a
    // TypeError, NaN or Infinity a RangeError, as every option is refused.
    if (typeof startMs !== 'number' || !Number.isFinite(startMs)) {
      throw optionError('new ManualClock: startMs', 'a finite number of ms', startMs)
    }
    this.#now = startMs
  }

  now(): number {
    return this.#now
  }

  setTimeout(callback: () => void, ms: number): unknown {
    // Refused here, as Node's setTimeout does: else `advance` threw
    // "callback is not a function" later, from whatever test drove time.
    if (typeof callback !== 'function') {
      throw new TypeError(
        `ManualClock.setTimeout expects a function, got ${describeValue(callback)}`,
      )
    }
    return this.#schedule(callback, delayOf(ms))
  }

  /** Cancels a timer this clock made; any other handle (another clock's, a number) is ignored. */
  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as object)
  }

  static {
    wholeTimeout = (clock, callback, ms, options) => {
      if (typeof clock !== 'object' || clock === null || !(#timers in clock)) return undefined
      if (options?.keepAlive === true && clock.setTimeout !== ManualClock.prototype.setTimeout) {
        return undefined
      }
      return clock.#schedule(callback, ms)
    }
    firesExactly = (clock) => typeof clock === 'object' && clock !== null && #timers in clock
    dueAt = (clock, handle, at) => {
      if (typeof clock !== 'object' || clock === null || !(#timers in clock)) return
      const timer = clock.#timers.get(handle as object)
      if (timer !== undefined && timer.at > at && timer.at === clock.#now + (at - clock.#now)) {
        timer.at = at
      }
    }
  }

  #schedule(callback: () => void, ms: number): object {
    // An object of its own, which only this clock holds as a key: numbered per
    // clock, a handle from another clock (or a plain number) cancelled this
    // clock's timer of the same number.
    const handle = Object.freeze({})
    this.#timers.set(handle, { handle, at: this.#now + ms, seq: ++this.#seq, callback })
    return handle
  }

  /** Timers scheduled and not yet fired or cleared — a leak check. */
  get pendingTimers(): number {
    return this.#timers.size
  }

  /**
   * Move time forward, firing due timers in order (including ones they
   * schedule). A callback that throws does not stop the step: the later
   * timers still run and the clock reaches `now + ms`, then the first error
   * is rethrown.
   */
  advance(ms: number): void {
    // A negative step ran the "monotonic" clock backwards; NaN (or Infinity)
    // left it reading NaN for good, and every deadline made on it after that.
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
      throw new RangeError(`advance expects a finite number of ms ≥ 0, got ${String(ms)}`)
    }
    const target = this.#now + ms
    // Each step finite, the sum not (Number.MAX_VALUE twice): the clock read
    // Infinity for good, every deadline made on it was born expired with
    // elapsed() NaN, and a wait on it never settled (Infinity − Infinity).
    if (!Number.isFinite(target)) {
      throw new RangeError(
        `advance(${String(ms)}) would take the clock past every finite time, from ${String(this.#now)}`,
      )
    }
    // A callback that throws does not stop the step: the timers due after it
    // still run and the clock still reaches `target`, then the first error is
    // rethrown — as vitest's fake timers (@sinonjs/fake-timers) do. Stopped
    // there, a deadline due later in the step stayed live and the clock short
    // of it. A flag, not the error: `throw undefined` is a throw too.
    let threw = false
    let firstError: unknown
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
      this.#timers.delete(next.handle)
      this.#now = Math.max(this.#now, next.at)
      try {
        next.callback()
      } catch (error) {
        if (!threw) {
          threw = true
          firstError = error
        }
      }
    }
    // A timer's callback may itself advance past `target` (a test helper that
    // drives time from inside a callback): setting `target` then moved the
    // monotonic clock backwards.
    this.#now = Math.max(this.#now, target)
    if (threw) throw firstError
  }
}

/**
 * The delay a timer of `ms` waits on this clock, as `systemClock` would wait
 * it: a delay that is not a number > 0 (0, NaN, undefined, negative) is due
 * at once — `advance(0)` fires it — where Node fires it too, after its 1 ms
 * floor (not modelled: other packages' tests rely on `advance(0)`). A timer
 * at `now + NaN` was never due, and what it guarded hung in the test while it
 * fired in production. Past 2³¹−1 ms (Infinity included) it is cut to 2³¹−1
 * ms, as `systemClock` cuts it (Node's own timers would overflow to 1 ms).
 */
function delayOf(ms: unknown): number {
  const n = Number(ms)
  if (!(n > 0)) return 0
  return Math.min(n, MAX_TIMER_MS)
}
