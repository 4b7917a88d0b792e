import { refuseUnknownOptions } from '@hourglass/core'

/**
 * Core's `refuseUnknownOptions` for options read on every call (`callModel`,
 * `runTurns`, `sideEffect`): the same TypeError naming the key, the one
 * probably meant and the taker, but a `for…in` over the keys given and no
 * allocation unless one is unknown. Ignored, a misspelt option left its
 * default in force while its author believed it set: `retry: { maxAttempt:
 * 1 }` retried three times, `deadlineMs: 500` ran without a deadline,
 * `runTurns({ maxTurn: 3 })` paid for ten turns. Anything but an object is
 * left to the checks that read it.
 */
export function refuseUnknownNames(
  options: unknown,
  names: ReadonlySet<string>,
  taker: string,
): void {
  if (typeof options !== 'object' || options === null) return
  for (const key in options) {
    if (Object.hasOwn(options, key) && !names.has(key)) {
      refuseUnknownOptions(options, [...names], taker)
    }
  }
}
