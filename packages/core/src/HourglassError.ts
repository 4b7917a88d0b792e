const MARKER = Symbol.for('@hourglass/error')

/**
 * The base of every error Hourglass throws. `code` is stable and meant to be
 * matched on; messages are for humans and may change.
 *
 * Guards test a `Symbol.for` marker rather than `instanceof`, so they keep
 * working when two copies of a package end up installed side by side.
 */
export class HourglassError extends Error {
  readonly code: string

  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options)
    this.code = code
    this.name = new.target.name
    Object.defineProperty(this, MARKER, { value: true })
  }
}

/** True for any error created by any installed copy of an Hourglass package. */
export function isHourglassError(error: unknown): error is HourglassError {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as Record<symbol, unknown>)[MARKER] === true &&
    typeof (error as { code?: unknown }).code === 'string'
  )
}

/** True when `error` is an Hourglass error with the given stable `code`. */
export function hasErrorCode(error: unknown, code: string): error is HourglassError {
  return isHourglassError(error) && error.code === code
}
