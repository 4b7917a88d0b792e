import { HourglassError, hasErrorCode } from '@hourglass/core'

export interface ProviderLimitedDetails {
  provider: string
  /** Which limit refused: requests (`rpm`) or tokens (`tpm`). */
  limit: 'rpm' | 'tpm'
  /** How long until the window resets, in ms (Infinity: the request alone exceeds the limit). */
  retryAfterMs: number
  /** Wall-clock epoch ms of the reset, for a `Retry-After` header. */
  retryAtMs: number
  /** Time the deadline had left when the request was refused, in ms. */
  remainingMs: number
}

/**
 * The provider's own RPM/TPM limit is spent and the reset comes after the
 * request's deadline: it fails now instead of queueing for nothing.
 */
export class ProviderLimitedError extends HourglassError {
  static readonly code = 'PROVIDER_LIMITED'
  readonly provider: string
  readonly limit: 'rpm' | 'tpm'
  readonly retryAfterMs: number
  readonly retryAtMs: number

  constructor(details: ProviderLimitedDetails) {
    const wait = Number.isFinite(details.retryAfterMs)
      ? `retry after ${Math.ceil(details.retryAfterMs)} ms`
      : 'the request alone exceeds the limit'
    super(
      ProviderLimitedError.code,
      `${details.provider} ${details.limit.toUpperCase()} limit reached: ${wait} (${Math.floor(details.remainingMs)} ms left)`,
    )
    this.provider = details.provider
    this.limit = details.limit
    this.retryAfterMs = details.retryAfterMs
    this.retryAtMs = details.retryAtMs
  }
}

export function isProviderLimited(error: unknown): error is ProviderLimitedError {
  return hasErrorCode(error, ProviderLimitedError.code)
}
