import { HourglassError, hasErrorCode } from '@hourglass/core'

export interface RateLimitedDetails {
  provider: string
  model?: string | undefined
  /** How long from when the error was made until a retry may succeed, in ms. */
  retryAfterMs: number
  /**
   * When to retry, as wall-clock epoch ms (`Date.now()` scale), so it can be
   * shown or forwarded as an HTTP `Retry-After`. Defaults to now + retryAfterMs.
   */
  retryAtMs?: number | undefined
  /** Why no attempt (or no further attempt) was made. */
  reason: string
  cause?: unknown
}

/**
 * The provider is rate-limiting and the wait does not fit: the call fails at
 * once rather than sending a request just to learn the limit still holds.
 */
export class RateLimitedError extends HourglassError {
  static readonly code = 'RATE_LIMITED'
  readonly provider: string
  readonly model: string | undefined
  readonly retryAfterMs: number
  readonly retryAtMs: number

  constructor(details: RateLimitedDetails) {
    const retryAfterMs = Math.max(0, Math.ceil(details.retryAfterMs))
    super(
      RateLimitedError.code,
      `rate limited by ${details.provider}${details.model === undefined ? '' : `/${details.model}`}: retry after ${retryAfterMs} ms (${details.reason})`,
      details.cause === undefined ? undefined : { cause: details.cause },
    )
    this.provider = details.provider
    this.model = details.model
    this.retryAfterMs = retryAfterMs
    this.retryAtMs = details.retryAtMs ?? Date.now() + retryAfterMs
  }
}

export function isRateLimited(error: unknown): error is RateLimitedError {
  return hasErrorCode(error, RateLimitedError.code)
}
