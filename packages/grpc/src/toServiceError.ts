import { Metadata, type ServerErrorResponse, status } from '@grpc/grpc-js'
import { type Deadline, endedBy, isDeadlineExceeded, isExpiryOf } from '@hourglass/core'
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
 * `deadline` still has its time (a job's cap, a retry refused for its
 * back-off: `@hourglass/bullmq`'s `fromJobError` marks them so) is still
 * `DEADLINE_EXCEEDED`, but without the trailer: the caller's budget is not
 * gone, and it was told not to retry a call that might well succeed.
 */
export function toServiceError(
  error: unknown,
  deadline?: Deadline | undefined,
): ServerErrorResponse | undefined {
  const ended = endedBy(error)
  if (ended === undefined) return undefined
  const code = isDeadlineExceeded(ended) ? status.DEADLINE_EXCEEDED : status.CANCELLED
  const callsOwn =
    deadline === undefined || deadline.done || deadline.expired || isExpiryOf(ended, deadline)
  const metadata = code === status.DEADLINE_EXCEEDED && callsOwn ? expiredTrailer() : new Metadata()
  return Object.assign(new Error(ended.message, { cause: error }), {
    code,
    details: ended.message,
    metadata,
  })
}
