import { type Deadline, MAX_RESERVE_MS, markForeignExpiry } from '@hourglass/core'
import { enforcingDeadline } from './enforcingDeadline.js'

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
 *
 * Within `MAX_RESERVE_MS` (the largest reserve an ingress keeps) of its end,
 * `current` counts as ended: a job given the request's deadline (the
 * default) is stopped at its copy of it, conservative by a Redis round trip,
 * so its news can come a few ms before the request's own timer — its
 * expiry all the same; and any deadline error then leaves the request no
 * time to do anything else.
 */
export function asOwnOrForeignExpiry<E>(error: E, current: Deadline | undefined): E {
  if (current === undefined) return error
  // Under a budget on trial, the deadline that enforces above it: the trial's
  // own time passing (observed) ends nothing, and an error read as its
  // expiry was answered 504 `x-deadline-expired` with the request's time left.
  const bound = enforcingDeadline(current)
  if (bound.done || bound.expired) return error
  if (bound.remaining() <= MAX_RESERVE_MS) return error
  return markForeignExpiry(error)
}
