import { describeValue } from './describeValue.js'
import { isAbortSignal } from './isAbortSignal.js'
import { hooksDone, type WaitOptions, wait } from './wait.js'

/**
 * `work`'s outcome, unless the deadline or the signal ends first: then its
 * reason, at once (an observe-only deadline never ends it, as with `wait`).
 * For round trips to a store that may never answer — a Redis that is down
 * behind a client that queues commands (ioredis's default offline queue),
 * or paused — which a call must not outlive its deadline, nor ignore its
 * cancel, waiting on. What `work` does when it settles later still happens.
 * Without a deadline or a signal it is `work`'s outcome, however long it takes.
 */
export async function untilEnded<T>(
  work: Promise<T> | T,
  until: Pick<WaitOptions, 'deadline' | 'signal' | 'clock'> | null = {},
): Promise<T> {
  // Omitted or `null`: no bound (it threw reading `until.deadline`). A value
  // or a thenable that is no Promise is awaited as `await` would (it threw
  // "work.catch is not a function" once a deadline was given).
  until ??= {}
  // `false` too: through `wait(Infinity)` it kept the process alive while the work was pending.
  if ((until.deadline == null || until.deadline === false) && until.signal == null) return work
  // `false` is none, as before (`{ deadline: useIt && req.deadline }`).
  if (until.deadline != null && until.deadline !== false && !hooksDone(until.deadline)) {
    return Promise.reject(
      new TypeError(
        `untilEnded: deadline must be a Deadline, got ${describeValue(until.deadline)}`,
      ),
    )
  }
  if (until.signal != null && !isAbortSignal(until.signal)) {
    return Promise.reject(
      new TypeError(
        `untilEnded: signal must be an AbortSignal, got ${describeValue(until.signal)}`,
      ),
    )
  }
  const promise = Promise.resolve(work)
  // When the deadline or the signal has already ended, `wait` rejects before
  // `work` is ever subscribed to: its later rejection, which nobody awaits
  // any more, must not be an unhandled rejection (that ends the process).
  promise.catch(noop)
  // The one object `work`'s handlers reach. `work` may be shared and outlive
  // this caller by far (a run other callers join, a store round trip that
  // never answers): handlers that held `wake` itself kept this wait's settle,
  // and through it the deadline, the signal and all they reach (a request,
  // its response, its body), until `work` settled. The unsubscribe, called
  // the moment the wait ends, cuts that link.
  const link: Link<T> = { wake: undefined, outcome: undefined }
  await wait(Number.POSITIVE_INFINITY, {
    ...until,
    wakeOn: (wake) => {
      link.wake = wake
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
  // Woken only once `work` settled.
  const settled = link.outcome as NonNullable<Link<T>['outcome']>
  if (!settled.ok) throw settled.error
  return settled.value
}

interface Link<T> {
  wake: (() => void) | undefined
  outcome: { ok: true; value: T } | { ok: false; error: unknown } | undefined
}

const noop = () => {}
