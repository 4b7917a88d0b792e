import { HourglassError, hasErrorCode } from '@hourglass/core'
import type { NormalizedError } from '../types.js'
import { printableError } from './printableError.js'

export const PROVIDER_REPLY = 'PROVIDER_REPLY'

/**
 * A provider's reply that is not the success it looks like: an error frame
 * in a 200 stream, or a 200 body without an answer in it. Carries the
 * normalised error so policy code can decide without knowing the dialect.
 */
export class ProviderReplyError extends HourglassError {
  static override readonly errorName: string = 'ProviderReplyError'
  static readonly code = PROVIDER_REPLY
  readonly error: NormalizedError

  constructor(error: NormalizedError, options?: ErrorOptions) {
    // A parser's words quote the provider's (Gemini's block reason).
    const printable = printableError(error)
    super(
      PROVIDER_REPLY,
      `provider reply failed (${printable.kind}): ${printable.message}`,
      options,
    )
    this.error = printable
  }
}

export function isProviderReplyError(error: unknown): error is ProviderReplyError {
  return hasErrorCode(error, PROVIDER_REPLY)
}

const malformed = new WeakSet<ProviderReplyError>()

/**
 * A 200 body or chunk we cannot read. Never resent to the same model as it
 * is: in a stream `readEvents` makes it a failure after the 200 (the
 * generation had started), and the adapter a whole answer's failure (the
 * generation happened), both charged (`billedBy`); only a 2xx body that is
 * no JSON at all (a proxy's page) is asked again.
 */
export function malformedReply(what: string, cause?: unknown): ProviderReplyError {
  const error = new ProviderReplyError(
    { kind: 'server_error', retryable: true, status: 200, message: `malformed ${what}` },
    cause === undefined ? undefined : { cause },
  )
  malformed.add(error)
  return error
}

/** Made by `malformedReply`: a reply that could not be read, not an error the provider sent. @internal */
export function isMalformedReply(error: unknown): error is ProviderReplyError {
  return typeof error === 'object' && error !== null && malformed.has(error as ProviderReplyError)
}
