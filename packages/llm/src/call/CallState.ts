import type { Clock, Deadline } from '@hourglass/core'
import type { Admission } from '../admission/Admission.js'
import type { RetryBudgetRegistry } from '../retry/RetryBudgetRegistry.js'
import type { CallModelOptions, RecoveryOptions, RetryOptions } from './CallModelOptions.js'

/** What one `callModel` shares across its models, attempts and recovery steps. @internal */
export interface CallState {
  readonly options: CallModelOptions
  /** `options.retry`, or `{}`. */
  readonly retry: RetryOptions
  /** `options.recovery`, or `{}`. */
  readonly recovery: RecoveryOptions
  readonly deadline: Deadline | undefined
  /**
   * What stops the call: `options.signal`, and for a stream its `cancel` too
   * (the stream's own signal, which follows the caller's). Every wait —
   * backoff, overload, admission — and every attempt ends on it at once.
   */
  readonly signal: AbortSignal | undefined
  readonly clock: Clock
  /** When the call began, on `clock`: its place in line at a cooling provider. */
  readonly startedAt: number
  /** The admission in use: the option's, else the process default; undefined when turned off. */
  readonly admission: Admission | undefined
  /** The retry budgets in use: the option's, else the process default; undefined when turned off. */
  readonly retryBudgets: RetryBudgetRegistry | undefined
  /** Attempts sent so far, across every model and recovery step. */
  attempts: number
  /** USD recorded against the budget by this call so far. */
  costUsd: number
}
