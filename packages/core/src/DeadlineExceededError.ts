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

/**
 * The time allotted to a request (or one slice of it) ran out.
 *
 * It says `504` (`status` and `statusCode`) as http-errors' errors say
 * theirs, so an HTTP error handler that knows nothing of Hourglass answers
 * a timeout as one: Express's own final handler (a route behind
 * `deadline()` without `deadlineErrors()`, whose slice ran out before the
 * request did) answered a 500, with the stack outside production, and so
 * did an app's handler answering `err.status ?? err.statusCode ?? 500`.
 */
export class DeadlineExceededError extends HourglassError {
  static override readonly errorName: string = 'DeadlineExceededError'
  static readonly code = 'DEADLINE_EXCEEDED'
  readonly budgetMs: number
  readonly elapsedMs: number
  readonly slice: string | undefined

  /**
   * `504` (Gateway Timeout), the HTTP status of a deadline's expiry, read as
   * http-errors' `status` is (by Express's and Koa's error handlers), and
   * the same under `statusCode` (finalhandler's fallback). Values on the
   * prototype (below), not on each error: logs, JSON and equality checks of
   * the error see the fields they saw before, and an app that sets its own
   * (`err.status = 503`) sets it on that error alone, as on any error.
   */
  declare status: number
  declare statusCode: number

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

for (const name of ['status', 'statusCode']) {
  Object.defineProperty(DeadlineExceededError.prototype, name, {
    value: 504,
    writable: true,
    enumerable: false,
    configurable: true,
  })
}

function round(ms: number): number {
  return Number.isFinite(ms) ? Math.round(ms) : ms
}

export function isDeadlineExceeded(error: unknown): error is DeadlineExceededError {
  return hasErrorCode(error, DeadlineExceededError.code)
}
