import type { NextCall } from '@grpc/grpc-js'

type NextCallResult = ReturnType<NextCall>

/**
 * The target of the channel a call is made on, as grpc-js names it
 * (`dns:127.0.0.1:50051`, `unix:/tmp/s.sock`), read from a call that is made
 * but not yet started: until it is under way grpc-js answers `getPeer()` with
 * its channel's target, and an interceptor has no other way to that channel.
 * Undefined when nothing says (a call below that answers `unknown`, or
 * throws: an interceptor's own, or a channel gone): a tracer then leaves the
 * server out rather than the call failing over telemetry.
 */
export function channelTarget(call: NextCallResult): string | undefined {
  try {
    const peer: unknown = call.getPeer()
    return typeof peer === 'string' && peer !== '' && peer !== 'unknown' ? peer : undefined
  } catch {
    return undefined
  }
}
