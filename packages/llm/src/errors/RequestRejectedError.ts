import { HourglassError, hasErrorCode } from '@hourglass/core'
import type { ErrorKind } from '../types.js'
import { describeFailures, type ModelFailure } from './ModelFailure.js'
import type { ProviderError } from './ProviderError.js'

export interface RequestRejectedDetails {
  /** The refusal. */
  error: ProviderError
  /** Attempts sent across every model before the refusal (the refused one included). */
  attempts: number
  /** Every model tried, in the order each gave up, the one that refused last. */
  causes: ModelFailure[]
  /** What recovery was tried first (`collapse`, `compact`), if any. */
  recoveries?: string[] | undefined
}

/**
 * The provider refused the request itself: a bad request, a content-policy
 * refusal, or a prompt too long for the context window (after any collapse
 * and compaction the caller offered). Never retried and never sent to a
 * fallback model: the same request gets the same refusal for the same bill.
 * Models earlier in the list may have been tried first, and given up on for
 * other reasons (an overload, a model not found): `causes` names them all.
 */
export class RequestRejectedError extends HourglassError {
  static override readonly errorName: string = 'RequestRejectedError'
  static readonly code = 'REQUEST_REJECTED'
  readonly kind: ErrorKind
  readonly status: number
  readonly providerCode: string | undefined
  /** The provider that refused. */
  readonly provider: string
  /** The model that refused. */
  readonly model: string
  readonly attempts: number
  /**
   * Every model tried, in the order each gave up, as `ModelUnavailableError.causes`:
   * the refusing model last. A collapse or compaction sends the list again,
   * so a model tried in each pass is named once per pass.
   */
  readonly causes: ModelFailure[]
  readonly recoveries: string[]

  constructor(details: RequestRejectedDetails) {
    const e = details.error
    const recoveries = details.recoveries ?? []
    // Named only when another model was tried: the refusing model alone is
    // the head of the message already.
    const others = details.causes.some((c) => c.provider !== e.provider || c.model !== e.model)
    super(
      RequestRejectedError.code,
      `request rejected by ${e.provider}/${e.model}: ${e.kind} (HTTP ${e.status}); never retried${recoveries.length > 0 ? ` (after ${recoveries.join(', ')})` : ''}: ${e.normalized.message}${others ? ` [${describeFailures(details.causes)}]` : ''}`,
      { cause: e },
    )
    this.kind = e.kind
    this.status = e.status
    this.providerCode = e.providerCode
    this.provider = e.provider
    this.model = e.model
    this.attempts = details.attempts
    this.causes = details.causes
    this.recoveries = recoveries
  }
}

export function isRequestRejected(error: unknown): error is RequestRejectedError {
  return hasErrorCode(error, RequestRejectedError.code)
}
