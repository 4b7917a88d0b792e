import pTimeout from 'p-timeout'
import { MAX_TIMER_MS, type TimerOptions } from './clock.js'
import { currentDeadline } from './context.js'
import { type Deadline, isExpiryOf } from './Deadline.js'
import { isDeadlineExceeded } from './DeadlineExceededError.js'
import { describeValue } from './describeValue.js'
import { expiryError } from './expiryError.js'
import { isDeadline } from './isDeadline.js'
import { dueAt, firesExactly, wholeTimeout } from './ManualClock.js'

/** Work that may be cancellable: a promise with an optional `cancel()` (PCancelable and friends). */
export type GuardedWork<T> = PromiseLike<T> & { cancel?: () => void }

export interface GuardOptions {
  /** The deadline to bound the work by. Default: `currentDeadline()`; without either, or `false`, the work runs unbounded. */
  deadline?: Deadline | false | undefined
  /** The slice name reported in the error. Default: the deadline's name. */
  slice?: string | undefined
}

/**
 * Bound work that cannot take an `AbortSignal` (a driver without signal
 * support, `dns.lookup`, a parse in a worker) by the time left. When the
 * deadline runs out — or is cancelled — the returned promise rejects at once
 * (`DeadlineExceededError` naming the slice, or the cancel reason), the work's
 * `cancel()` is called if it has one, and no timer or listener is left behind.
 *
 * The work itself may keep running: guard stops *waiting* for it. A function
 * is called inside the guard so a synchronous throw becomes a rejection.
 */
export function guard<T>(
  work: GuardedWork<T> | (() => GuardedWork<T> | T),
  options: GuardOptions | null = {},
): Promise<T> {
  // The slice's name passed where the options belong (`guard(work, 'dns')`)
  // read as no options: no name, and the current deadline.
  if (options != null && typeof options !== 'object') {
    return refuse(
      work,
      new TypeError(
        `guard: options must be an object ({ deadline?, slice? }), got ${describeValue(options)}`,
      ),
    )
  }
  const given = options?.deadline
  // A number of ms where the Deadline belongs threw "Cannot read properties
  // of undefined (reading 'aborted')" synchronously, out of a function whose
  // callers handle only its rejection.
  // `false` is none, as before (`{ deadline: useIt && req.deadline }`).
  if (given != null && given !== false && !isDeadline(given)) {
    return refuse(
      work,
      new TypeError(`guard: deadline must be a Deadline, got ${describeValue(given)}`),
    )
  }
  // Checked here, with or without a deadline: a Symbol was found only at
  // expiry, when the error message was built from it ("Cannot convert a
  // Symbol value to a string", a TypeError in place of the deadline's
  // error); a number or an object was named "5" or "[object Object]".
  const named = options?.slice
  if (named != null && typeof named !== 'string') {
    return refuse(work, new TypeError(`guard: slice must be a string, got ${describeValue(named)}`))
  }
  const deadline = given ?? currentDeadline()
  if (!deadline) {
    try {
      return Promise.resolve(typeof work === 'function' ? work() : work) as Promise<T>
    } catch (error) {
      return Promise.reject(error)
    }
  }
  const slice = named ?? deadline.name
  // Marked as the deadline's: an Express app answers it as the request's expiry.
  const exceeded = (cause?: unknown) => expiryError(deadline, { slice, cause })
  // The deadline's own timer may win the race: report it under this
  // slice's name. Only its own line's expiry (its, an ancestor's, or a
  // deadline's made under it; see `isExpiryOf`): a deadline error of an
  // unrelated deadline inside the work (a cap of its own) is not this
  // guard's, and renamed it told of an expiry that had not come.
  const ownExpiry = (error: unknown): unknown =>
    isDeadlineExceeded(error) && error.slice !== slice && isExpiryOf(error, deadline)
      ? exceeded(error)
      : error
  // Its expiry is enforced unless it only observes. One disposed while live
  // (to opt out of it) reads remaining() Infinity: no end, no timer; a
  // disposal during the wait is checked when the timer fires. A cancel ends
  // the wait in every case.
  const enforces = !deadline.observe
  // Ended already: aborted (expired unless observing, or cancelled — an
  // observe-only deadline too, once the client left), or its time passed
  // before its timer ran. A function is not called: a paid model call, a
  // write, that nobody will wait for (what `plan.run` does for a slice that
  // has ended). Work already started is cancelled here: the abort listener
  // below would never hear an abort that is over.
  const ended = deadline.signal.aborted
    ? deadline.reason
    : enforces && deadline.remaining() <= 0
      ? exceeded()
      : undefined
  if (ended !== undefined) return refuse(work, ended)
  let promise: GuardedWork<T>
  try {
    promise = typeof work === 'function' ? toWork(work()) : work
  } catch (error) {
    return Promise.reject(error)
  }
  // Ended while the function's synchronous part ran: it used up the time
  // left (a busy loop building a request body; remaining() then read 0, and
  // p-timeout refused it with "Expected `milliseconds` to be a positive
  // number"), or it cancelled the deadline itself — an abort the listener
  // below, added after it, would never hear. Either way the work was
  // neither cancelled nor its promise's later rejection handled: the
  // process died of an unhandled rejection.
  // Read once: the timer below takes this same figure (a second read on a
  // real clock could find the last fraction of a ms gone: 0 again).
  const remaining = deadline.remaining()
  const endedDuring = deadline.signal.aborted
    ? deadline.reason
    : enforces && remaining <= 0
      ? exceeded()
      : undefined
  if (endedDuring !== undefined) {
    handleLater(promise)
    cancelWork(promise)
    return Promise.reject(ownExpiry(endedDuring))
  }
  // Once, whichever comes first: the deadline's abort or guard's own timer.
  // Both may fire in one stretch with no microtask between them (a
  // ManualClock's advance() runs timers due together back to back; a cancel
  // just before the timer falls due, with p-timeout's clear still queued),
  // and a work's cancel() need not be idempotent (one that counts, rolls
  // back or throws once done).
  let cancelled = false
  const cancel = () => {
    if (cancelled) return
    cancelled = true
    cancelWork(promise)
  }
  // The abort ends the wait here, not through p-timeout's `signal` option:
  // p-timeout replaces a nullish reason with an AbortError of its own, so a
  // `cancel(null)` (as `AbortController.abort(null)`, a null reason) was
  // answered with an error nobody gave, where wait, untilEnded and plan.run
  // reject with the null. Rejected at once (a timer due in the same
  // stretch, a ManualClock's advance(), comes second), unless the work had
  // settled first: its outcome stands, as it did inside p-timeout.
  let endWith: (reason: unknown) => void = () => {}
  const aborted = new Promise<never>((_, reject) => {
    endWith = reject
  })
  let workSettled = false
  const settled = () => {
    workSettled = true
  }
  // Adopted once: a thenable's `then` may run its work (a query builder
  // runs its query on each call), so a second adoption ran it twice.
  const adopted = Promise.resolve(promise)
  adopted.then(settled, settled)
  const onAbort = (reason: unknown) => {
    cancel()
    if (!workSettled) endWith(reason)
  }
  // Heard through `onDone`, not an `abort` listener on the deadline's
  // signal: a handler that guards many calls at once under its request's
  // deadline (`Promise.all(ids.map((id) => guard(db.get(id))))`) added one
  // listener each, and at 11 in flight Node warned "Possible EventTarget
  // memory leak detected" (MaxListenersExceededWarning). `wait` and
  // `untilEnded` hear it the same way.
  const offAbort = deadline.onDone(onAbort)
  // Observe-only ones, and disposed ones (remaining() Infinity), need no
  // timer of ours: the deadline's abort (`onDone`) ends the wait if it ever
  // comes.
  // A far one (past 2^31-1 ms: `Deadline.after(30 days)`) does: the timer is
  // also what keeps the process alive while guard waits (the deadline's own
  // is unref'd), and without it a script awaiting guard under a 30-day
  // deadline exited with code 13 at once, where one under 20 days waited
  // (and `wait`, `untilEnded` and `plan.run` hold it under both). It re-arms
  // in steps, as the deadline's own does (one whole timer on a ManualClock).
  // `remaining` was read after the work started (a function's synchronous
  // part took some), and is > 0 when enforced (checked above).
  const milliseconds =
    !enforces || !Number.isFinite(remaining) ? Number.POSITIVE_INFINITY : remaining
  const clock = deadline.clock
  const expiresAt = deadline.expiresAt
  const exact = firesExactly(clock)
  // p-timeout calls timers with `this` undefined; the clock's methods need
  // theirs. And it arms one timer for the time left, which can fire before
  // the clock reaches the deadline (Node truncates fractional delays, libuv
  // counts whole ms): guard then rejected with DEADLINE_EXCEEDED while the
  // deadline still had time. Re-armed for the rest, as Deadline's own timer
  // is: guard never gives up early.
  const customTimers = {
    setTimeout: (callback: () => void, ms: number) => {
      const handle: GuardTimer = { timer: undefined, cleared: false }
      const arm = (delay: number) => {
        // Whole ms for Node's timers; the very time on a ManualClock (see `wait`).
        const timerMs = exact ? delay : Math.ceil(delay)
        const fire = () => {
          // Cleared, but by a clock whose setTimeout returns no handle (its
          // type allows it) and so could not cancel it: the work had
          // finished, and its cancel() was called at the deadline anyway.
          if (handle.cleared) return
          // Disposed while guard waited: it no longer expires; only the
          // work, or a cancel through the signal, ends the wait now. Read
          // from what it says (`expiresAt` Infinity once disposed), not a
          // private field: a deadline of another installed copy of core
          // (`req.deadline` made by @hourglass/express's own) was never
          // seen disposed, and guard rejected at its old expiry.
          if (deadline.expiresAt === Number.POSITIVE_INFINITY) return
          const left = expiresAt - clock.now()
          if (left > 0) arm(left)
          else callback()
        }
        // Kept alive, as `wait`'s timer is: the deadline's own is unref'd,
        // so a script awaiting guard on work that holds no handle of its
        // own (a promise on an event that never comes) exited with code 13
        // instead of rejecting at the deadline. Cleared when guard settles.
        // Past 2^31-1 ms, whole on a ManualClock (see `wholeTimeout`), else
        // in steps.
        const whole =
          timerMs > MAX_TIMER_MS ? wholeTimeout(clock, fire, timerMs, KEEP_ALIVE) : undefined
        handle.timer = whole ?? clock.setTimeout(fire, Math.min(timerMs, MAX_TIMER_MS), KEEP_ALIVE)
        if (exact) dueAt(clock, handle.timer, expiresAt)
      }
      arm(ms)
      return handle
    },
    clearTimeout: (handle: GuardTimer | undefined) => {
      if (handle === undefined) return
      handle.cleared = true
      clock.clearTimeout(handle.timer)
    },
  } as unknown as { setTimeout: typeof setTimeout; clearTimeout: typeof clearTimeout }
  const bounded = pTimeout(adopted, {
    milliseconds,
    customTimers,
    // Built when the time is up, so elapsedMs is the real figure.
    fallback: (): never => {
      cancel()
      throw exceeded()
    },
  })
  return Promise.race([bounded, aborted])
    .catch((error: unknown) => {
      throw ownExpiry(error)
    })
    .finally(() => {
      offAbort()
      // Ended by the abort: guard's timer (kept alive) would otherwise stay
      // armed until the time left ran out.
      bounded.clear()
    })
}

/** The options of guard's timer: one object for every guard (guard runs per request). */
const KEEP_ALIVE: TimerOptions = { keepAlive: true }

/** guard's timer for p-timeout: the clock's handle, and whether it was cleared. */
interface GuardTimer {
  timer: unknown
  cleared: boolean
}

function toWork<T>(value: GuardedWork<T> | T): GuardedWork<T> {
  return value !== null &&
    typeof value === 'object' &&
    typeof (value as PromiseLike<T>).then === 'function'
    ? (value as GuardedWork<T>)
    : Promise.resolve(value)
}

/**
 * `work.cancel()`, whose throw is dropped: guard's answer is the deadline's
 * error either way, and there is nobody to hand the throw to. Thrown from
 * guard it came before the work's rejection was handled (the process died
 * of it), and from the abort listener it was reported as uncaught (so did).
 */
function cancelWork(work: { cancel?: (() => void) | undefined }): void {
  try {
    // An `async` cancel type-checks as `() => void`: its rejection is a throw too.
    const done: unknown = work.cancel?.()
    if (typeof (done as PromiseLike<unknown> | undefined)?.then === 'function') {
      ;(done as PromiseLike<unknown>).then(undefined, () => {})
    }
  } catch {
    // A cancel that cannot (the request already written): the work goes on, unwaited.
  }
}

/**
 * `error`, without waiting for `work`: a function is not called; work
 * already started is cancelled and its rejection handled — left alone, a
 * promise that failed later with nobody listening crashed the process (an
 * ended deadline, and an option refused: `guard(work, { slice: 5 })`).
 */
function refuse<T>(work: GuardedWork<T> | (() => unknown), error: unknown): Promise<T> {
  if (typeof work !== 'function') {
    handleLater(work)
    cancelWork(work)
  }
  return Promise.reject(error)
}

/**
 * Handle the later rejection of work guard will not wait for — a native
 * promise only: adopting a thenable calls its `then`, and a lazy one (a knex
 * or objection query builder, a mongoose Query, a drizzle query) runs its
 * query there. guard refused it (deadline over, client gone, an option
 * refused) and still sent the query nobody would wait for.
 */
function handleLater(work: unknown): void {
  if (work instanceof Promise) work.then(undefined, () => {})
}
