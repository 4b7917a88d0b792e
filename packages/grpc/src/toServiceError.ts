import { Metadata, type ServerErrorResponse, status } from '@grpc/grpc-js'
import {
  type Deadline,
  endedBy,
  isDeadlineExceeded,
  isExpiryOf,
  isForeignExpiry,
  MAX_RESERVE_MS,
} from '@hourglass/core'
import { expiredTrailer } from './expiredStatus.js'

/**
 * The gRPC status for an Hourglass error, as the error object grpc-js turns
 * into a status (`code` number, `details`, `metadata`): a deadline error →
 * `DEADLINE_EXCEEDED` with the `x-deadline-expired: 1` trailer (the caller's
 * budget is gone too: do not retry); `ClientClosedError` → `CANCELLED`.
 * An error caused by one of those (its `cause` chain: llm's
 * `StreamInterruptedError` for a streamed answer cut by its deadline, Node's
 * `AbortError`) maps as that cause. Undefined for any other error. The
 * original is the `cause`.
 *
 * A deadline error known to be an unrelated deadline's while the call's own
 * `deadline` still has its time (a cap of the handler's own, a job's read
 * back by `@hourglass/bullmq`'s `fromJobError`, which marks it so), more
 * than `MAX_RESERVE_MS` before the call's deadline ends, is no expiry of the
 * call: undefined, passed on as any other error (grpc-js
 * answers UNKNOWN with its message), as `@hourglass/express`'s
 * `deadlineErrors()` passes it on with `next(error)`. As DEADLINE_EXCEEDED
 * (with the trailer, "do not retry") a caller 42 ms into a 3 s request took
 * it for its own expiry and answered 504; without the trailer it could not
 * be told apart from a handler's own DEADLINE_EXCEEDED for its line's end
 * (a downstream 504 answered by hand, earlier than the budget sent by the
 * reserves of the hops behind it).
 */
export function toServiceError(
  error: unknown,
  deadline?: Deadline | undefined,
): ServerErrorResponse | undefined {
  const ended = endedBy(error)
  if (ended === undefined) return undefined
  const expired = isDeadlineExceeded(ended)
  // Within the largest reserve of its end, the call's deadline counts as
  // ended: an error of another deadline's then leaves it no time either.
  if (
    expired &&
    deadline !== undefined &&
    !deadline.done &&
    deadline.remaining() > MAX_RESERVE_MS
  ) {
    if (!isExpiryOf(ended, deadline)) return undefined
  }
  // No deadline of the call's (no deadlineServerInterceptor) to ask about,
  // but an expiry marked as from elsewhere (a remote's own cap behind a
  // call of ours) still says it is none of this call's: answered, it was
  // DEADLINE_EXCEEDED with x-deadline-expired (do not retry).
  if (expired && deadline === undefined && isForeignExpiry(ended)) return undefined
  const code = expired ? status.DEADLINE_EXCEEDED : status.CANCELLED
  const metadata = expired ? expiredTrailer() : new Metadata()
  return Object.assign(new Error(ended.message, { cause: error }), {
    code,
    details: ended.message,
    metadata,
  })
}
