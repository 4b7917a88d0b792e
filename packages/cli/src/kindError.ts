import { optionError } from '@hourglass/core'

/**
 * A TypeError whatever the value: `optionError` makes a number a RangeError,
 * but `main(5)`, `runDemo(5)`, `io: 1` or `onProgress: 1` is the wrong kind
 * of thing, not a value out of range, and a caller matching on the README's
 * TypeError got a RangeError.
 */
export function kindError(name: string, rule: string, value: unknown): TypeError {
  return new TypeError(optionError(name, rule, value).message)
}
