import { HourglassError, hasErrorCode } from '@hourglass/core'
import { describeFailures, type ModelFailure } from './ModelFailure.js'

export interface ModelUnavailableDetails {
  /** Attempts sent, across every model. */
  attempts: number
  /**
   * One entry per model tried, in the order each gave up: a model the call
   * went back to (left for one expected to answer sooner) has one, at its
   * last failure, counting every attempt sent to it. Their `attempts` add
   * up to `attempts`.
   */
  causes: ModelFailure[]
  /** The last error seen, from any model. */
  lastCause: unknown
  /** Why the call stopped as a whole. */
  reason: string
}

/**
 * Every model in the list failed or was given up on. The caller chooses what
 * next: a cached answer, another route, or an error page.
 */
export class ModelUnavailableError extends HourglassError {
  static override readonly errorName: string = 'ModelUnavailableError'
  static readonly code = 'MODEL_UNAVAILABLE'
  readonly attempts: number
  readonly causes: ModelFailure[]
  readonly lastCause: unknown
  readonly reason: string

  constructor(details: ModelUnavailableDetails) {
    const tried = describeFailures(details.causes)
    super(
      ModelUnavailableError.code,
      `model unavailable after ${details.attempts} attempt(s): ${details.reason}${tried === '' ? '' : ` [${tried}]`}`,
      details.lastCause === undefined ? undefined : { cause: details.lastCause },
    )
    this.attempts = details.attempts
    this.causes = details.causes
    this.lastCause = details.lastCause
    this.reason = details.reason
  }
}

export function isModelUnavailable(error: unknown): error is ModelUnavailableError {
  return hasErrorCode(error, ModelUnavailableError.code)
}
