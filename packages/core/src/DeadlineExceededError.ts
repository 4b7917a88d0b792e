import { HourglassError, hasErrorCode } from './HourglassError.js'

export interface DeadlineExceededDetails {
  /** The whole budget of the deadline that ran out, in ms. */
  budgetMs: number
  /** How long had passed since that deadline was created, in ms. */
  elapsedMs: number
  /** The slice that was running when the time ran out, if any. */
  slice?: string | undefined
  cause?: unknown
}

/** The time allotted to a request (or one slice of it) ran out. */
export class DeadlineExceededError extends HourglassError {
  static readonly code = 'DEADLINE_EXCEEDED'
  readonly budgetMs: number
  readonly elapsedMs: number
  readonly slice: string | undefined

  constructor(details: DeadlineExceededDetails) {
    const where = details.slice === undefined ? '' : ` in slice "${details.slice}"`
    super(
      DeadlineExceededError.code,
      `deadline exceeded${where}: ${round(details.elapsedMs)} ms elapsed of a ${round(details.budgetMs)} ms budget`,
      details.cause === undefined ? undefined : { cause: details.cause },
    )
    this.budgetMs = round(details.budgetMs)
    this.elapsedMs = round(details.elapsedMs)
    this.slice = details.slice
  }
}

function round(ms: number): number {
  return Number.isFinite(ms) ? Math.round(ms) : ms
}

export function isDeadlineExceeded(error: unknown): error is DeadlineExceededError {
  return hasErrorCode(error, DeadlineExceededError.code)
}
