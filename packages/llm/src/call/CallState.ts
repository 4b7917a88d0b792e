import type { Clock, Deadline } from '@hourglass/core'
import type { CallModelOptions } from './CallModelOptions.js'

/** What one `callModel` shares across its models, attempts and recovery steps. @internal */
export interface CallState {
  readonly options: CallModelOptions
  readonly deadline: Deadline | undefined
  readonly clock: Clock
  /** Attempts sent so far, across every model and recovery step. */
  attempts: number
  /** USD recorded against the budget by this call so far. */
  costUsd: number
}
