import { type Deadline, isAbortError, isClientClosed, isDeadlineExceeded } from '@hourglass/core'
import type { ErrorKind, StopKind } from '../errors/errorKinds.js'
import { isProviderError } from '../errors/ProviderError.js'
import { isStreamInterrupted } from '../errors/StreamInterruptedError.js'

/**
 * The `errorKind` of an attempt that ended by a throw rather than with a
 * provider's answer: `deadline_exceeded` or `aborted` when the call was
 * stopped, the provider error's kind for a stream broken after its first
 * token, else undefined (`errorClass` still names what was thrown). A stop
 * reason can be any value (`controller.abort(anything)`), so it is known by
 * identity with the signal's or the deadline's reason, not by its class.
 */
export function endedKind(
  thrown: unknown,
  stop: { signal: AbortSignal | undefined; deadline: Deadline | undefined },
): ErrorKind | StopKind | undefined {
  const cause = isStreamInterrupted(thrown) ? thrown.cause : thrown
  if (isProviderError(cause)) return cause.kind
  if (isDeadlineExceeded(cause)) return 'deadline_exceeded'
  const { signal, deadline } = stop
  if (
    isAbortError(cause) ||
    isClientClosed(cause) ||
    (signal?.aborted === true && cause === signal.reason) ||
    (deadline?.done === true && cause === deadline.reason)
  ) {
    return 'aborted'
  }
  return undefined
}
