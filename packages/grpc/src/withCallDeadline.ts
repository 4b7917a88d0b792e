import type { CallOptions } from '@grpc/grpc-js'
import { type Deadline, describeValue, isDeadline } from '@hourglass/core'

// A symbol, not a `deadline` field: grpc-js's own `deadline` option is a Date
// or epoch ms, and a client without our interceptor must not be handed an
// object it would do arithmetic on.
const CALL_DEADLINE = Symbol.for('@hourglass/grpc.call-deadline')

/**
 * Call options that give this one call `deadline` explicitly — for code where
 * the async context is lost, or that must use another deadline than the
 * current one. `deadlineInterceptor()` reads it instead of `currentDeadline()`:
 * `client.getItem(req, withCallDeadline(deadline, { host }), callback)`.
 */
export function withCallDeadline(deadline: Deadline, options: CallOptions = {}): CallOptions {
  // Here, where it is written: a number of ms or a Date (grpc-js's own
  // `deadline` option's types) failed only at the call, inside the
  // interceptor, as "deadline.remaining is not a function". Undefined (a
  // `currentDeadline()` with none current) leaves the call to the current one.
  if (deadline !== undefined && !isDeadline(deadline)) {
    throw new TypeError(
      `withCallDeadline: deadline must be a Deadline from @hourglass/core (Deadline.after(ms)), got ${describeValue(deadline)}`,
    )
  }
  return { ...options, [CALL_DEADLINE]: deadline } as CallOptions
}

/** @internal The deadline `withCallDeadline` put on a call's options. */
export function explicitDeadline(options: object): Deadline | undefined {
  return (options as { [CALL_DEADLINE]?: Deadline })[CALL_DEADLINE]
}
