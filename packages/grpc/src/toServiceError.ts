import { Metadata, type ServerErrorResponse, status } from '@grpc/grpc-js'
import { endedBy, isDeadlineExceeded } from '@hourglass/core'
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
 */
export function toServiceError(error: unknown): ServerErrorResponse | undefined {
  const ended = endedBy(error)
  if (ended === undefined) return undefined
  const code = isDeadlineExceeded(ended) ? status.DEADLINE_EXCEEDED : status.CANCELLED
  const metadata = code === status.DEADLINE_EXCEEDED ? expiredTrailer() : new Metadata()
  return Object.assign(new Error(ended.message, { cause: error }), {
    code,
    details: ended.message,
    metadata,
  })
}
