import type { Metadata } from '@grpc/grpc-js'
import type { Deadline } from '@hourglass/core'

// On the call's metadata object — the one thing grpc-js hands from the
// interceptor to the handler's call — and shared by every installed copy.
const DEADLINE = Symbol.for('@hourglass/grpc.deadline')

type Carrier = { [DEADLINE]?: Deadline }

/** @internal Called by the server interceptor before the handler sees the metadata. */
export function attachDeadline(metadata: Metadata, deadline: Deadline): void {
  ;(metadata as unknown as Carrier)[DEADLINE] = deadline
}

/**
 * The deadline `deadlineServerInterceptor()` gave this call (the same one
 * `currentDeadline()` returns inside the handler), for code where the async
 * context is lost. Undefined when the call did not go through the interceptor.
 */
export function deadlineOf(call: { readonly metadata: Metadata }): Deadline | undefined {
  return (call.metadata as unknown as Carrier | undefined)?.[DEADLINE]
}
