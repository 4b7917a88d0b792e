import { HourglassError, hasErrorCode } from '@hourglass/core'
import type { NormalizedError } from '../types.js'

export const PROVIDER_REPLY = 'PROVIDER_REPLY'

/**
 * A provider's reply that is not the success it looks like: an error frame
 * in a 200 stream, or a 200 body without an answer in it. Carries the
 * normalised error so policy code can decide without knowing the dialect.
 */
export class ProviderReplyError extends HourglassError {
  static readonly code = PROVIDER_REPLY
  readonly error: NormalizedError

  constructor(error: NormalizedError, options?: ErrorOptions) {
    super(PROVIDER_REPLY, `provider reply failed (${error.kind}): ${error.message}`, options)
    this.error = error
  }
}

export function isProviderReplyError(error: unknown): error is ProviderReplyError {
  return hasErrorCode(error, PROVIDER_REPLY)
}

/** A 200 body or chunk we cannot read: retryable, since nothing was produced for the caller. */
export function malformedReply(what: string, cause?: unknown): ProviderReplyError {
  return new ProviderReplyError(
    { kind: 'server_error', retryable: true, status: 200, message: `malformed ${what}` },
    cause === undefined ? undefined : { cause },
  )
}
