import { HourglassError, hasErrorCode } from '@hourglass/core'
import type { ErrorKind, NormalizedError } from '../types.js'

export interface ProviderErrorDetails {
  /** The adapter's name (`openai`, `anthropic`, …). */
  provider: string
  model: string
  /** The failure as the provider's dialect classified it. */
  error: NormalizedError
  cause?: unknown
}

/**
 * One failed model attempt, classified: an HTTP error, an error hidden in a
 * 200 body, an SSE error frame, or a transport failure (`network`,
 * `timeout`). What `ModelUnavailableError.causes` and `onAttempt` carry, so a
 * log line never needs to know the provider's dialect.
 */
export class ProviderError extends HourglassError {
  static readonly code = 'PROVIDER_ERROR'
  readonly provider: string
  readonly model: string
  readonly kind: ErrorKind
  readonly retryable: boolean
  /** HTTP status as received; 200 for errors in a 200 body or stream, 0 when no answer came. */
  readonly status: number
  readonly providerCode: string | undefined
  /** The wait the provider asked for, in ms, if it named one. */
  readonly retryAfterMs: number | undefined
  /** The normalised error, as the dialect returned it. */
  readonly normalized: NormalizedError

  constructor(details: ProviderErrorDetails) {
    const e = details.error
    const code = e.providerCode === undefined ? '' : `, ${e.providerCode}`
    super(
      ProviderError.code,
      `${details.provider}/${details.model}: ${e.kind} (HTTP ${e.status}${code}): ${e.message}`,
      details.cause === undefined ? undefined : { cause: details.cause },
    )
    this.provider = details.provider
    this.model = details.model
    this.kind = e.kind
    this.retryable = e.retryable
    this.status = e.status
    this.providerCode = e.providerCode
    this.retryAfterMs = e.retryAfterMs
    this.normalized = e
  }
}

export function isProviderError(error: unknown): error is ProviderError {
  return hasErrorCode(error, ProviderError.code)
}
