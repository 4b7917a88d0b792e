import type { StatusObject } from '@grpc/grpc-js'

// grpc-js builds a call's error with `Object.assign(new Error(), status)`,
// which copies symbol-keyed properties: the reason rides from the status the
// interceptor delivers onto the `ServiceError` the caller catches.
const REASON = Symbol.for('@hourglass/grpc.reason')

/** @internal The status with the Hourglass error that explains it. */
export function withReason(status: StatusObject, reason: unknown): StatusObject {
  return { ...status, [REASON]: reason } as StatusObject
}

/**
 * The Hourglass error behind a failed gRPC call made through
 * `deadlineInterceptor()`: `DEADLINE_EXCEEDED` (from our deadline, grpc-js's
 * timer or the server) → core's `DeadlineExceededError`; a call cancelled
 * because the caller's deadline was → that reason (e.g. `ClientClosedError`).
 * Anything else is returned as it is. So an Express handler can write
 * `next(fromGrpcError(error))` and `deadlineErrors()` answers 504.
 */
export function fromGrpcError(error: unknown): unknown {
  if (typeof error !== 'object' || error === null) return error
  return (error as { [REASON]?: unknown })[REASON] ?? error
}
