import { HourglassError, hasErrorCode } from '@hourglass/core'
import type { ChatResponse } from '../types.js'
import { describeError } from './describeError.js'

export interface OutputTruncatedDetails {
  /** Everything produced, continuation parts joined; its `finishReason` is still `length`. */
  response: ChatResponse
  /** Recovery steps taken (`raise-cap`, `continue`). */
  recoveries: string[]
  /**
   * Why no further step ran before the limit: the cost budget could not
   * afford it (its `BudgetExceededError`), admission turned it away (its
   * `RateLimitedError`), it was refused as a request, or every model failed
   * it (its `ModelUnavailableError`).
   */
  cause?: unknown
  /**
   * Whether the step `cause` ended had an attempt sent (the message says
   * "the next step failed"; else "was not run"). Counted, not read from
   * `cause`: a fallback list's error is its last model's, so a
   * `BudgetExceededError` may end a step model A was sent, and a
   * `ModelUnavailableError` one no model was.
   */
  stepSent?: boolean | undefined
  /**
   * The provider's reason when the stop was a full context window
   * (`model_context_window_exceeded`), not the output cap: no step was run
   * after it, none could help.
   */
  windowFull?: string | undefined
}

/**
 * The answer still stopped at the output cap after raising the cap and
 * asking the model to continue, up to the recovery limit — or stopped
 * because the context window is full, which no step can lift (`windowFull`
 * in the details). Carries what was produced: the caller decides whether a
 * truncated answer is usable.
 */
export class OutputTruncatedError extends HourglassError {
  static override readonly errorName: string = 'OutputTruncatedError'
  static readonly code = 'OUTPUT_TRUNCATED'
  readonly response: ChatResponse
  readonly recoveries: string[]

  constructor(details: OutputTruncatedDetails) {
    super(
      OutputTruncatedError.code,
      `${details.windowFull === undefined ? 'output still cut at the token limit' : `output cut: the context window is full (${details.windowFull}), which no recovery step can lift; stopped`} after ${details.recoveries.length} recovery step(s) (${details.recoveries.join(', ') || 'none'}); ${details.response.text.length} characters produced${details.cause === undefined ? '' : `; ${details.stepSent === true ? 'the next step failed' : 'the next step was not run'}: ${describeError(details.cause)}`}`,
      details.cause === undefined ? undefined : { cause: details.cause },
    )
    this.response = details.response
    this.recoveries = details.recoveries
  }
}

export function isOutputTruncated(error: unknown): error is OutputTruncatedError {
  return hasErrorCode(error, OutputTruncatedError.code)
}
