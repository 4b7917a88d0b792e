import type { Deadline } from '@hourglass/core'

// On the deadline object, shared by every installed copy of this package: the
// server interceptor of one may hand the deadline to the client interceptor
// of another.
const UNBOUNDED = Symbol.for('@hourglass/grpc.unbounded-stream')

type Marked = { [UNBOUNDED]?: true }

/**
 * @internal Marks the deadline the server interceptor gives a server-streaming
 * or bidi call that came with none: no expiry, there only to carry the
 * client's cancel. It is no caller's choice of "no deadline".
 */
export function markUnboundedStream(deadline: Deadline): void {
  ;(deadline as unknown as Marked)[UNBOUNDED] = true
}

/**
 * @internal The current deadline has no expiry only because a server stream
 * came with none (it, or a child of it with no expiry of its own): a call made
 * under it has no deadline at all, and gets the client's `defaultMs`.
 */
export function isUnboundedStream(deadline: Deadline): boolean {
  if (Number.isFinite(deadline.expiresAt)) return false
  for (let d: Deadline | undefined = deadline; d !== undefined; d = d.parent) {
    if ((d as unknown as Marked)[UNBOUNDED] === true) return true
  }
  return false
}
