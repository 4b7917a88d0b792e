// Node's own, not the global: see `settleWithin`.
import { setImmediate } from 'node:timers'
import { isClock, systemClock } from './clock.js'
import { describeValue } from './describeValue.js'
import { isAbortSignal } from './isAbortSignal.js'
import { clockRefusal, hooksDone, type WaitOptions, wait } from './wait.js'

/** How `work` settled: its value, or what it threw. */
export type WorkOutcome<T> = { ok: true; value: T } | { ok: false; error: unknown }

/**
 * How `work` settled, or `undefined` when `ms` passed on the clock first
 * (`work` goes on; its late outcome is dropped). The deadline or the signal
 * ending first rejects with their reason, at once, as `wait` does. The one
 * "work's outcome, or stop waiting" of Hourglass: `untilEnded` (ms Infinity)
 * and llm's store timeouts are it. An outcome that comes in as the timer
 * fires is taken: the work did settle — on a real clock, so is one whose
 * I/O arrived while the loop was too busy to read it (the timer is then due
 * before the socket is read; one turn of the loop's poll phase is given).
 * Infinity with neither a deadline nor a signal is `work`'s outcome,
 * holding nothing open while it is pending.
 */
export async function outcomeWithin<T>(
  work: Promise<T> | T,
  ms: number,
  until: Pick<WaitOptions, 'deadline' | 'signal' | 'clock'> | null = {},
): Promise<WorkOutcome<T> | undefined> {
  until ??= {}
  const refused = boundsRefusal('outcomeWithin', until)
  if (refused) return Promise.reject(refused)
  if (typeof ms !== 'number') {
    return Promise.reject(
      new TypeError(`outcomeWithin expects a number of ms, got ${describeValue(ms)}`),
    )
  }
  return settleWithin(work, ms, until)
}

/**
 * @internal `outcomeWithin` on options already checked: `untilEnded` checks
 * them itself, to name itself in what it refuses, and the check is not made
 * twice per call.
 */
export async function settleWithin<T>(
  work: Promise<T> | T,
  ms: number,
  until: Pick<WaitOptions, 'deadline' | 'signal' | 'clock'>,
): Promise<WorkOutcome<T> | undefined> {
  if (ms === Number.POSITIVE_INFINITY && !hasBound(until)) {
    // Nothing ends this wait but `work`: through `wait(Infinity)` a pending
    // `work` kept the process alive for good.
    return Promise.resolve(work).then<WorkOutcome<T>, WorkOutcome<T>>(
      (value) => ({ ok: true, value }),
      (error: unknown) => ({ ok: false, error }),
    )
  }
  // When the deadline or the signal has already ended, `wait` rejects before
  // `work` is ever subscribed to: its later rejection, which nobody awaits
  // any more, must not be an unhandled rejection (that ends the process).
  // A native promise only: adopting a thenable calls its `then`, which runs
  // a lazy one's work (a query builder's query) that nobody will wait for.
  if (work instanceof Promise) work.catch(noop)
  // The one object `work`'s handlers reach. `work` may be shared and outlive
  // this caller by far (a run other callers join, a store round trip that
  // never answers): handlers that held `wake` itself kept this wait's settle,
  // and through it the deadline, the signal and all they reach (a request,
  // its response, its body), until `work` settled. The unsubscribe, called
  // the moment the wait ends, cuts that link.
  const link: Link<T> = { wake: undefined, outcome: undefined }
  await wait(ms, {
    ...until,
    wakeOn: (wake) => {
      link.wake = wake
      // A value, or a thenable that is no Promise, is awaited as `await`
      // would — adopted here, once the wait is armed (not when the deadline
      // or the signal had already ended it).
      const promise = Promise.resolve(work)
      promise.catch(noop)
      promise.then(
        (value) => {
          link.outcome = { ok: true, value }
          link.wake?.()
        },
        (error: unknown) => {
          link.outcome = { ok: false, error }
          link.wake?.()
        },
      )
      return () => {
        link.wake = undefined
      }
    },
  })
  // Woken once `work` settled; else the time ran out first (undefined) —
  // unless its answer was already in. After the loop was blocked past `ms`
  // (a CPU-bound handler, a loaded machine), Node runs due timers before it
  // reads the sockets: a Redis that answered in a millisecond was taken for
  // one that did not answer at all, and limits shared through it fell back
  // to each process's own share (21 requests went out under a fleet limit of
  // 12). One turn of the loop's poll phase reads what has arrived first. A
  // real clock's only: a ManualClock's time is the test's, and no I/O is late.
  // A turn of the real loop, through `node:timers`' own `setImmediate`: fake
  // timers (`vi.useFakeTimers()`, Jest's) replace the global one, and a timed
  // out call stayed pending until the test moved fake time again.
  const clock = until.clock ?? (until.deadline ? until.deadline.clock : undefined) ?? systemClock
  if (link.outcome === undefined && clock.realTime === true) {
    await new Promise<void>((resolve) => setImmediate(resolve))
  }
  return link.outcome
}

/**
 * A `deadline` with no `onDone` (a number of ms where the Deadline belongs),
 * a `signal` that is no `AbortSignal` (an `AbortController`) or a `clock`
 * that is no `Clock`, refused naming `name`'s option; `deadline: false` is
 * none.
 */
export function boundsRefusal(
  name: string,
  until: Pick<WaitOptions, 'deadline' | 'signal' | 'clock'>,
): TypeError | undefined {
  if (until.deadline != null && until.deadline !== false && !hooksDone(until.deadline)) {
    return new TypeError(
      `${name}: deadline must be a Deadline, got ${describeValue(until.deadline)}`,
    )
  }
  if (until.signal != null && !isAbortSignal(until.signal)) {
    return new TypeError(
      `${name}: signal must be an AbortSignal, got ${describeValue(until.signal)}`,
    )
  }
  if (until.clock != null && !isClock(until.clock)) return clockRefusal(name, until.clock)
  return undefined
}

/** Whether a deadline or a signal may end the wait (`deadline: false` is none). */
export function hasBound(until: Pick<WaitOptions, 'deadline' | 'signal'>): boolean {
  return (until.deadline != null && until.deadline !== false) || until.signal != null
}

interface Link<T> {
  wake: (() => void) | undefined
  outcome: WorkOutcome<T> | undefined
}

const noop = () => {}
