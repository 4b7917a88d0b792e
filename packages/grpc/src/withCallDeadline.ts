import type { CallOptions } from '@grpc/grpc-js'
import { type Deadline, describeValue, isDeadline } from '@hourglass/core'

// A symbol, not a `deadline` field: grpc-js's own `deadline` option is a Date
// or epoch ms, and a client without our interceptor must not be handed an
// object it would do arithmetic on.
const CALL_DEADLINE = Symbol.for('@hourglass/grpc.call-deadline')
// Marks the interceptors deadlineInterceptor() makes. Symbol.for: two
// installed copies of this package (both of a version that marks them)
// recognise each other's.
const DEADLINE_INTERCEPTOR = Symbol.for('@hourglass/grpc.deadline-interceptor')

/**
 * Call options that give this one call `deadline` explicitly — for code where
 * the async context is lost, or that must use another deadline than the
 * current one. `deadlineInterceptor()` reads it instead of `currentDeadline()`:
 * `client.getItem(req, withCallDeadline(deadline, { host }), callback)`.
 */
export function withCallDeadline(
  deadline: Deadline,
  options: CallOptions | null = {},
): CallOptions {
  // `null` is no options, as grpc-js takes it for a call's (it threw reading `null.interceptors`).
  options ??= {}
  // Here, where it is written: a number of ms or a Date (grpc-js's own
  // `deadline` option's types) failed only at the call, inside the
  // interceptor, as "deadline.remaining is not a function". Undefined (a
  // `currentDeadline()` with none current) leaves the call to the current one.
  if (deadline !== undefined && !isDeadline(deadline)) {
    throw new TypeError(
      `withCallDeadline: deadline must be a Deadline from @hourglass/core (Deadline.after(ms)), got ${describeValue(deadline)}`,
    )
  }
  // grpc-js runs a call's own `interceptors` instead of the client's, not as
  // well: without ours among them nothing reads the deadline, and the call
  // went out with no gRPC deadline at all (not even `defaultMs`), silently.
  // (`interceptor_providers` cannot be checked: what they return is known
  // only at the call.)
  const own = options.interceptors
  if (Array.isArray(own) && own.length > 0 && !own.some(isDeadlineInterceptor)) {
    throw new TypeError(
      "withCallDeadline: the call options have interceptors of their own, which grpc-js runs instead of the client's: without deadlineInterceptor() among them the deadline would be ignored. Add deadlineInterceptor() to them",
    )
  }
  return { ...options, [CALL_DEADLINE]: deadline } as CallOptions
}

/** @internal Mark an interceptor as one deadlineInterceptor() made. */
export function markDeadlineInterceptor<T extends object>(interceptor: T): T {
  Object.defineProperty(interceptor, DEADLINE_INTERCEPTOR, { value: true })
  return interceptor
}

function isDeadlineInterceptor(interceptor: unknown): boolean {
  return (
    typeof interceptor === 'function' &&
    (interceptor as { [DEADLINE_INTERCEPTOR]?: unknown })[DEADLINE_INTERCEPTOR] === true
  )
}

/** @internal The deadline `withCallDeadline` put on a call's options. */
export function explicitDeadline(options: object): Deadline | undefined {
  return (options as { [CALL_DEADLINE]?: Deadline })[CALL_DEADLINE]
}
