import { type Deadline, markForeignExpiry } from '@hourglass/core'

/**
 * @internal `error`, a deadline error made from a job's deadline, as the
 * expiry of `current` (the deadline the caller waits under) only when
 * `current` has ended: its time is up, or it was cancelled. While it still
 * has time the job ran out of a deadline of its own (a cap the producer
 * gave it, a retry refused for the back-off it needed): marked as an
 * unrelated deadline's, so `@hourglass/express`'s `deadlineErrors()` passes
 * it on with `next(error)` rather than answering 504 `x-deadline-expired`
 * with most of the request's time left. Unmarked, core counts an error of
 * no known deadline as the caller's own, as it is with no `current`.
 */
export function asOwnOrForeignExpiry<E>(error: E, current: Deadline | undefined): E {
  if (current === undefined || current.done || current.expired) return error
  return markForeignExpiry(error)
}
