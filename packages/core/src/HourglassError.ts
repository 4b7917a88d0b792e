const MARKER = Symbol.for('@hourglass/error')

/**
 * The base of every error Hourglass throws. `code` is stable and meant to be
 * matched on; messages are for humans and may change.
 *
 * Guards test a `Symbol.for` marker rather than `instanceof`, so they keep
 * working when two copies of a package end up installed side by side.
 */
export class HourglassError extends Error {
  static readonly errorName: string = 'HourglassError'
  readonly code: string

  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options)
    this.code = code
    // The class's own `errorName` where it declares one (each of ours does):
    // a bundler that minifies class names (esbuild's and rolldown's
    // `--minify`) renamed `DeadlineExceededError` to `e`, and every log
    // line, stack and span's `exception.type` read `e: deadline exceeded …`.
    // A subclass of the app's own without one keeps its class name.
    this.name = Object.hasOwn(new.target, 'errorName')
      ? String((new.target as { errorName?: unknown }).errorName)
      : new.target.name
    Object.defineProperty(this, MARKER, { value: true })
  }
}

/**
 * True for any error created by any installed copy of an Hourglass package.
 * Never throws: error handlers call it on whatever was thrown, and a value
 * whose property reads throw (a revoked `Proxy`, a throwing getter) made
 * their own throw replace the error being handled — in gRPC's, an uncaught
 * exception that ended the process.
 */
export function isHourglassError(error: unknown): error is HourglassError {
  if (typeof error !== 'object' || error === null) return false
  try {
    return (
      (error as Record<symbol, unknown>)[MARKER] === true &&
      typeof (error as { code?: unknown }).code === 'string'
    )
  } catch {
    return false
  }
}

/** True when `error` is an Hourglass error with the given stable `code`. */
export function hasErrorCode(error: unknown, code: string): error is HourglassError {
  if (!isHourglassError(error)) return false
  try {
    // Read again: a getter may answer a string once and throw the next time.
    return error.code === code
  } catch {
    return false
  }
}
