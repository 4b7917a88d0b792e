import { HourglassError, hasErrorCode } from '@hourglass/core'
import type { ChatResponse } from '../types.js'
import { describeError } from './describeError.js'

export interface RepairFailedDetails {
  /** Every validation error, first answer's first. */
  errors: unknown[]
  /** The last answer, which still failed validation. */
  lastResponse: ChatResponse
  /** Repair turns sent (not counting the first call). */
  repairs: number
}

/** The answer still failed validation after `maxRepairs` repair turns. */
export class RepairFailedError extends HourglassError {
  static override readonly errorName: string = 'RepairFailedError'
  static readonly code = 'REPAIR_FAILED'
  readonly errors: unknown[]
  readonly lastResponse: ChatResponse
  readonly repairs: number

  constructor(details: RepairFailedDetails) {
    const last = details.errors.at(-1)
    super(
      RepairFailedError.code,
      `answer failed validation ${details.errors.length} time(s) (${details.repairs} repair turn(s)); last error: ${describeError(last)}`,
      last === undefined ? undefined : { cause: last },
    )
    this.errors = details.errors
    this.lastResponse = details.lastResponse
    this.repairs = details.repairs
  }
}

export function isRepairFailed(error: unknown): error is RepairFailedError {
  return hasErrorCode(error, RepairFailedError.code)
}
