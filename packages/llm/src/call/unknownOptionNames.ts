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
  tolerated?: ReadonlySet<string>,
): void {
  if (typeof options !== 'object' || options === null) return
  for (const key in options) {
    if (Object.hasOwn(options, key) && !names.has(key) && tolerated?.has(key) !== true) {
      const checked = tolerated === undefined ? options : withoutNames(options, tolerated)
      refuseUnknownOptions(checked, [...names], taker)
    }
  }
}

/**
 * The names the contexts of `runTurns` and `withRepair` carry beside the
 * options they pass on (`call`'s `{ turn, idempotencyKey, lastTurn, signal
 * }`, a tool's `{ key, turn, signal, deadline }`, `{ repair }`): tolerated by
 * `callModel` and `sideEffect`, into which the README has them passed —
 * `callModel({ models, request, ...context })`. Refused, every run passing
 * its context on so failed before its first model call.
 */
export const CONTEXT_NAMES: ReadonlySet<string> = new Set(['turn', 'lastTurn', 'repair', 'key'])

function withoutNames(options: object, names: ReadonlySet<string>): object {
  const kept: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(options)) if (!names.has(key)) kept[key] = value
  return kept
}
