import { describeValue } from './describeValue.js'

/**
 * The error for a bad option, as every package of Hourglass throws it: a
 * `RangeError` for a number out of range (NaN and Infinity included), a
 * `TypeError` for a value of another type, the message
 * `<name> must be <rule>, got <value>` with the value shown by
 * `describeValue` (so `'100'` is not read as the number 100). `name` carries
 * the caller's prefix where it has one (`'withDeadline: maxMs'`).
 */
export function optionError(name: string, rule: string, value: unknown): RangeError | TypeError {
  const message = `${name} must be ${rule}, got ${describeValue(value)}`
  return typeof value === 'number' ? new RangeError(message) : new TypeError(message)
}
