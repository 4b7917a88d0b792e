import { Metadata, type ServerErrorResponse, status } from '@grpc/grpc-js'
import { DEADLINE_EXPIRED_HEADER, isClientClosed, isDeadlineExceeded } from '@hourglass/core'

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
  const metadata = new Metadata()
  if (code === status.DEADLINE_EXCEEDED) metadata.set(DEADLINE_EXPIRED_HEADER, '1')
  return Object.assign(new Error(error.message, { cause: error }), {
    code,
    details: error.message,
    metadata,
  })
}
