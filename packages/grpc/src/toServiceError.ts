import { Metadata, type ServerErrorResponse, status } from '@grpc/grpc-js'
import { isClientClosed, isDeadlineExceeded } from '@hourglass/core'
import { expiredTrailer } from './expiredStatus.js'

/**
 * The gRPC status for an Hourglass error, as the error object grpc-js turns
 * into a status (`code` number, `details`, `metadata`): a deadline error →
 * `DEADLINE_EXCEEDED` with the `x-deadline-expired: 1` trailer (the caller's
 * budget is gone too: do not retry); `ClientClosedError` → `CANCELLED`.
 * Undefined for any other error. The original is the `cause`.
 */
export function toServiceError(error: unknown): ServerErrorResponse | undefined {
  let code: status
  if (isDeadlineExceeded(error)) code = status.DEADLINE_EXCEEDED
  else if (isClientClosed(error)) code = status.CANCELLED
  else return undefined
  const metadata = code === status.DEADLINE_EXCEEDED ? expiredTrailer() : new Metadata()
  return Object.assign(new Error(error.message, { cause: error }), {
    code,
    details: error.message,
    metadata,
  })
}
