import { HourglassError, hasErrorCode } from '@hourglass/core'
import type { ErrorKind } from '../types.js'
import type { ProviderError } from './ProviderError.js'

export interface RequestRejectedDetails {
  /** The refusal. */
  error: ProviderError
  /** Attempts sent across every model before the refusal (the refused one included). */
  attempts: number
  /** What recovery was tried first (`collapse`, `compact`), if any. */
  recoveries?: string[] | undefined
}

/**
 * The provider refused the request itself: a bad request, a content-policy
 * refusal, or a prompt too long for the context window (after any collapse
 * and compaction the caller offered). Never retried and never sent to a
 * fallback model: the same request gets the same refusal for the same bill.
 */
export class RequestRejectedError extends HourglassError {
  static readonly code = 'REQUEST_REJECTED'
  readonly kind: ErrorKind
  readonly status: number
  readonly providerCode: string | undefined
  readonly provider: string
  readonly model: string
  readonly attempts: number
  readonly recoveries: string[]

  constructor(details: RequestRejectedDetails) {
    const e = details.error
    const recoveries = details.recoveries ?? []
    super(
      RequestRejectedError.code,
      `request rejected by ${e.provider}/${e.model}: ${e.kind} (HTTP ${e.status}); never retried${recoveries.length > 0 ? ` (after ${recoveries.join(', ')})` : ''}: ${e.normalized.message}`,
      { cause: e },
    )
    this.kind = e.kind
    this.status = e.status
    this.providerCode = e.providerCode
    this.provider = e.provider
    this.model = e.model
    this.attempts = details.attempts
    this.recoveries = recoveries
  }
}

export function isRequestRejected(error: unknown): error is RequestRejectedError {
  return hasErrorCode(error, RequestRejectedError.code)
}
