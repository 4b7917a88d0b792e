// Node's own, not the globals: see `keepOpen`.
import { clearInterval, setInterval } from 'node:timers'
import { boundingDeadline } from './boundingDeadline.js'
import { type Clock, isClock, MAX_TIMER_MS, systemClock, type TimerOptions } from './clock.js'
import type { Deadline } from './Deadline.js'
import { describeValue } from './describeValue.js'
import { hearAbort } from './hearAbort.js'
import { isAbortSignal } from './isAbortSignal.js'
import { dueAt, firesExactly, wholeTimeout } from './ManualClock.js'

export interface WaitOptions {
  /** Ends the wait at once, rejecting with its reason, when it expires or is cancelled (an observe-only deadline's expiry never ends a wait; its cancel does). `false`: none (`{ deadline: useIt && req.deadline }`). */
  deadline?: Deadline | false | undefined
  /** Ends the wait at once, rejecting with its reason, when aborted. */
  signal?: AbortSignal | undefined
  /** Time source. Default: the deadline's clock, else the system clock. */
  clock?: Clock | undefined
  /**
   * Something else that may end the wait early, successfully: called once
   * with a `wake` function, returns its unsubscribe (called when the wait
   * settles, however it settles). A cooldown that ends, a slot that frees.
   */
  wakeOn?: ((wake: () => void) => () => void) | undefined
}

/** How a wait ended without being aborted: its time ran out, or `wakeOn` woke it. */
export type WaitResult = 'timer' | 'woken'

/**
 * The one cancellable wait of Hourglass: every back-off, cooldown and pacing
 * delay in every package goes through it.
 *
 * - Resolves `'timer'` after `ms` (on the clock, so a `ManualClock` drives it),
 *   or `'woken'` when `wakeOn` fires first.
 * - Rejects at once with the deadline's or the signal's reason when either
 *   ends first — and at once, without arming anything, if one already has.
 * - Keeps the process alive while it is pending: a script that awaits a
 *   retry back-off must not exit in the middle of it (the deadline's own
 *   timer stays unref'd, like `AbortSignal.timeout`'s). A wait of Infinity
 *   too, which only an abort or a wake ends (`untilEnded`).
 * - Releases its timer, its deadline hook, its signal listener and its
 *   `wakeOn` subscription the moment it settles.
 *
 * Delays past 2^31−1 ms are waited in steps (Node's timers overflow there),
 * except on a `ManualClock`, whose timers wait any delay whole.
 * A negative, NaN or zero `ms` resolves on the next microtask.
 */
export function wait(ms: number, options: WaitOptions | null = {}): Promise<WaitResult> {
  // `null` reads as no options: destructuring it threw synchronously out of
  // a function whose callers only handle its rejection.
  options ??= {}
  // `false` is none, as before (`{ deadline: useIt && req.deadline }`).
  const deadline = options.deadline === false ? undefined : options.deadline
  const { signal } = options
  // A number of ms or an AbortController where these belong failed inside
  // the wait ("deadline.onDone is not a function"), naming nothing.
  if (deadline != null && !hooksDone(deadline)) {
    return Promise.reject(
      new TypeError(`wait: deadline must be a Deadline, got ${describeValue(deadline)}`),
    )
  }
  if (signal != null && !isAbortSignal(signal)) {
    return Promise.reject(
      new TypeError(`wait: signal must be an AbortSignal, got ${describeValue(signal)}`),
    )
  }
  // Checked as Deadline.after checks its clock. Unchecked, the class passed
  // for an instance (`{ clock: ManualClock }`) threw "clock.now is not a
  // function" synchronously, out of a function whose callers only handle
  // its rejection; and a clock without `clearTimeout` threw from the abort
  // listener that ends the wait early: the wait never settled, and the
  // error was uncaught (the process ended).
  if (options.clock != null && !isClock(options.clock)) {
    return Promise.reject(clockRefusal('wait', options.clock))
  }
  // Not a number (undefined, a string): `Math.max(0, ms)` is NaN, and a wait
  // whose end is NaN never ends — the awaiting work hung for good.
  if (typeof ms !== 'number') {
    return Promise.reject(new TypeError(`wait expects a number of ms, got ${describeValue(ms)}`))
  }
  if (signal?.aborted) return Promise.reject(signal.reason)
  if (deadline?.done && deadline.reason !== undefined) return Promise.reject(deadline.reason)
  // Its time passed but its timer has not run yet (a busy loop: a CPU-bound
  // step before the back-off): it has ended all the same. `wait(0)` resolved
  // 'timer' on the next microtask, before that timer, and the retry went on
  // past the deadline. Expired now, as `throwIfExpired` does (an observe-only
  // deadline's own expiry, or a disposed one's, ends nothing), and rejected
  // with its reason.
  const overdue = overdueReason(deadline)
  if (overdue !== undefined) return Promise.reject(overdue.reason)
  const clock = options.clock ?? deadline?.clock ?? systemClock
  const total = Number.isNaN(ms) ? 0 : Math.max(0, ms)
  const startedAt = clock.now()
  if (typeof startedAt !== 'number' || Number.isNaN(startedAt)) {
    // The same hang, from a clock that reads NaN.
    return Promise.reject(
      new TypeError(`clock.now() must return a number of ms, got ${describeValue(startedAt)}`),
    )
  }
  return new Promise<WaitResult>((resolve, reject) => {
    let settled = false
    let timer: unknown
    let offDeadline: (() => void) | undefined
    let offWake: (() => void) | undefined
    let offAbort: (() => void) | undefined
    let holdOpen: ReturnType<typeof setInterval> | undefined
    const settle = (ok: boolean, value: unknown) => {
      if (settled) return
      settled = true
      if (timer !== undefined) clock.clearTimeout(timer)
      if (holdOpen !== undefined) clearInterval(holdOpen)
      offDeadline?.()
      offAbort?.()
      try {
        offWake?.()
      } catch (error) {
        // The caller's unsubscribe threw: thrown here, out of a timer or an
        // abort listener, it left the wait unsettled for good (and the
        // error uncaught). A wait that would have resolved rejects with it.
        reject(ok ? error : value)
        return
      }
      if (ok) resolve(value as WaitResult)
      else reject(value)
    }
    const onAbort = () => settle(false, signal?.reason)
    const endsAt = startedAt + total
    const arm = () => {
      const left = endsAt - clock.now()
      if (left <= 0) {
        settle(true, 'timer')
        return
      }
      if (!Number.isFinite(left)) {
        // Infinity: only an abort or a wake ends it. The deadline's own
        // timer and an abort's source may be unref'd: without a ref'd
        // handle a script awaiting this wait exited (code 13) before either
        // could end it. So on a real clock the process is held open by a
        // timer of the system's that never fires its work (not the clock's:
        // this is not a wait for time, and a test clock that drives every
        // kept-alive timer would fire it); a test clock needs none.
        if (clock.realTime === true) holdOpen = setInterval(keepOpen, MAX_TIMER_MS)
        return
      }
      // Rounded up to a whole ms for Node's timers, which truncate (a wait
      // that fires early re-arms for the rest). Not on a ManualClock, whose
      // timers fire at the very time asked for: rounded up there, a back-off
      // of 0.5 ms was still pending once `advance(0.5)` reached its end.
      const exact = firesExactly(clock)
      const ms = exact ? left : Math.ceil(left)
      // One whole timer on a ManualClock (see `wholeTimeout`): stepped, a
      // far wait fired one timer per 2^31−1 ms the test advanced.
      const whole = ms > MAX_TIMER_MS ? wholeTimeout(clock, fire, ms, KEEP_ALIVE) : undefined
      timer = whole ?? clock.setTimeout(fire, Math.min(ms, MAX_TIMER_MS), KEEP_ALIVE)
      // Due at its end itself, not one float step past (see `dueAt`).
      if (exact) dueAt(clock, timer, endsAt)
    }
    const fire = () => {
      timer = undefined
      // A clock whose setTimeout returns no handle (its type allows it)
      // cannot clear this timer: fired after the wait settled, it re-armed.
      if (settled) return
      if (clock.now() >= endsAt) settle(true, 'timer')
      else arm()
    }
    // One `abort` listener for every wait on this signal (see `hearAbort`):
    // one each, 11 waits sharing a caller's signal made Node warn of a leak.
    if (signal) offAbort = hearAbort(signal, onAbort)
    if (deadline) offDeadline = deadline.onDone((reason) => settle(false, reason))
    if (options.wakeOn && !settled) {
      let off: (() => void) | undefined
      // A wake while subscribing (the slot was already free) is held until
      // the unsubscribe is back: settled at once, the wait resolved 'woken'
      // before it could call it, and an unsubscribe that threw then was lost
      // (a throw from the executor of a settled promise goes nowhere).
      let subscribing = true
      let wokeWhileSubscribing = false
      const wake = () => {
        if (subscribing) wokeWhileSubscribing = true
        else settle(true, 'woken')
      }
      try {
        off = options.wakeOn(wake)
      } catch (error) {
        subscribing = false
        // A subscription that throws: the wait rejects with its error, and
        // the signal listener and deadline hook taken above go with it (a
        // bare throw from the executor rejected but left both behind). One
        // that woke it first resolves 'woken', as it always did.
        if (wokeWhileSubscribing) settle(true, 'woken')
        else settle(false, error)
        return
      }
      subscribing = false
      if (off !== undefined && typeof off !== 'function') {
        // `(wake) => emitter.once('free', wake)` returns the emitter: called
        // as the unsubscribe when the wait settled, it threw there, and the
        // wait never settled. Refused at once, naming what came back; the
        // subscription it made is the caller's to undo.
        settle(
          false,
          new TypeError(
            `wait: wakeOn must return its unsubscribe function (or nothing), got ${describeValue(off)}`,
          ),
        )
        return
      }
      if (settled) {
        // Ended while subscribing (the wakeOn cancelled the deadline): the
        // wait rejected with that reason, which stands (as settle keeps an
        // abort's reason over an unsubscribe's error); the subscription is
        // released now that its unsubscribe exists.
        try {
          off?.()
        } catch {}
        return
      }
      offWake = off
      // Woken while subscribing: settled now, so the unsubscribe is called
      // and its throw rejects the wait, as at any other wake.
      if (wokeWhileSubscribing) settle(true, 'woken')
    }
    if (settled) return
    if (total === 0) {
      queueMicrotask(() => settle(true, 'timer'))
      return
    }
    arm()
  })
}

/** A wait's timers keep the process alive (see `wait`). */
const KEEP_ALIVE: TimerOptions = Object.freeze({ keepAlive: true })

/**
 * The reason of a deadline whose time has passed while its timer has not
 * run yet: the deadline bounding it (itself when it enforces, else the
 * nearest enforcing one above it, whose expiry ends an observe-only one
 * under it; see `boundingDeadline`) is expired now, as `throwIfExpired`
 * does. Undefined when that leaves it live: time left, dark mode all the
 * way up, disposed, or a stand-in with no `throwIfExpired`. Boxed: a reason
 * may be any value.
 */
function overdueReason(deadline: Deadline | undefined): { reason: unknown } | undefined {
  let bound: Deadline | undefined
  try {
    bound = boundingDeadline(deadline)
  } catch {
    return undefined // a stand-in without `remaining`: the wait goes on as before
  }
  if (bound === undefined || typeof bound.throwIfExpired !== 'function') return undefined
  try {
    bound.throwIfExpired()
  } catch {
    // Ended: read below whether that ended `deadline` too.
  }
  return deadline?.done && deadline.reason !== undefined ? { reason: deadline.reason } : undefined
}

/**
 * What the interval holding an infinite wait's process open runs: nothing.
 * Set with `node:timers`' own `setInterval`, not the global: fake timers
 * (`vi.useFakeTimers()`, Jest's) replace the global, not an ESM import's
 * binding, and this is a handle, not a wait for time. Faked,
 * `vi.runAllTimers()` fired it 10,000 times and threw "Aborting after
 * running 10000 timers, assuming an infinite loop!" while such a wait was
 * pending.
 */
function keepOpen(): void {}

/**
 * @internal The refusal of a `clock` option that is no `Clock`, naming the
 * function `name` it was given to, in `Deadline.after`'s words.
 */
export function clockRefusal(name: string, clock: unknown): TypeError {
  return new TypeError(
    `${name}: clock must be a Clock ({ now, setTimeout, clearTimeout }), got ${describeValue(clock)}`,
  )
}

/**
 * What a wait needs of its deadline: `onDone` (a wait reads nothing else but
 * `done`, `reason` and `clock`). Checked by that member, not by
 * `isDeadline`'s whole shape: a stand-in made for the wait alone is fine.
 */
export function hooksDone(value: unknown): value is Deadline {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { onDone?: unknown }).onDone === 'function'
  )
}
