import { describeValue } from './describeValue.js'

/**
 * A key a factory does not read is a mistake, not an extension point:
 * ignored, `createFetch({ dnsTimeout: 5 })` left the 1 s default in force
 * while its author believed DNS was bounded at 5 ms, and `deadline({
 * defaultMS: 500 })` the 2 s default. A `TypeError` — the options have the
 * wrong shape — naming each such key and the option probably meant: the
 * one `meant` maps it to (a name from another library), else one within
 * two edits; options that are not an object at all (`createFetch(500)`)
 * too. `taker` says who takes them, `what` the kind of key (`option`,
 * `retry rule`). One function for every package's factories.
 */
export function refuseUnknownOptions(
  options: unknown,
  names: readonly string[],
  taker: string,
  { what = 'option', meant }: { what?: string; meant?: ReadonlyMap<string, string> } = {},
): void {
  if (options === undefined) return
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    // createFetch(500) read no limit from the number: the defaults applied.
    // Named after its taker: `options must be an object, got null` said
    // nothing of which call, in a stack of factories run at startup.
    const subject = what === 'option' ? 'options' : what
    throw new TypeError(`${taker}: ${subject} must be an object, got ${describeValue(options)}`)
  }
  const unknown = Object.keys(options).filter((key) => !names.includes(key))
  if (unknown.length === 0) return
  // A name the options already have is no misspelling of another key:
  // `{ ms: 50, max: 80 }` was told "did you mean ms?".
  const absent = names.filter((name) => !Object.hasOwn(options, name))
  const described = unknown.map((key) => {
    const shown = JSON.stringify(key.slice(0, 40))
    const guess = meant?.get(key) ?? closest(key, absent)
    return guess === undefined ? shown : `${shown} (did you mean ${guess}?)`
  })
  throw new TypeError(
    `unknown ${what}${unknown.length > 1 ? 's' : ''} ${described.join(', ')}; ${taker} takes ${names.join(', ')}`,
  )
}

/** The name within two edits of `key`, case aside (the nearest; the first of equals); undefined when none is that close. */
function closest(key: string, names: readonly string[]): string | undefined {
  let best: string | undefined
  let bestDistance = 3
  for (const name of names) {
    const distance = editDistance(key.toLowerCase(), name.toLowerCase())
    if (distance < bestDistance) {
      best = name
      bestDistance = distance
    }
  }
  return best
}

/** Levenshtein distance (insertions, deletions, substitutions), capped: 3 means "more than 2". */
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      )
    }
    previous = current
  }
  return previous[b.length] as number
}
