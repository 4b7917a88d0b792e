import { HourglassError, hasErrorCode } from '@hourglass/core'
import type { ChatResponse } from '../types.js'
import { describeError } from './describeError.js'

export interface OutputTruncatedDetails {
  /** Everything produced, continuation parts joined; its `finishReason` is still `length`. */
  response: ChatResponse
  /** Recovery steps taken (`raise-cap`, `continue`). */
  recoveries: string[]
  /** Why no further step ran before the limit: the cost budget could not afford it (its `BudgetExceededError`). */
  cause?: unknown
}

/**
 * The answer still stopped at the output cap after raising the cap and
 * asking the model to continue, up to the recovery limit. Carries what was
 * produced: the caller decides whether a truncated answer is usable.
 */
export class OutputTruncatedError extends HourglassError {
  static readonly code = 'OUTPUT_TRUNCATED'
  readonly response: ChatResponse
  readonly recoveries: string[]

  constructor(details: OutputTruncatedDetails) {
    super(
      OutputTruncatedError.code,
      `output still cut at the token limit after ${details.recoveries.length} recovery step(s) (${details.recoveries.join(', ') || 'none'}); ${details.response.text.length} characters produced${details.cause === undefined ? '' : `; the next step was not run: ${describeError(details.cause)}`}`,
      details.cause === undefined ? undefined : { cause: details.cause },
    )
    this.response = details.response
    this.recoveries = details.recoveries
  }
}

export function isOutputTruncated(error: unknown): error is OutputTruncatedError {
  return hasErrorCode(error, OutputTruncatedError.code)
}
