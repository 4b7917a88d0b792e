import { cutText } from './cutText.js'
import { escapeUnprintable } from './escapeUnprintable.js'

/**
 * A value as an option error shows it after "got": a string quoted (cut to
 * 40 characters, then escaped as `escapeUnprintable` escapes: a line break
 * shows as `\n` and keeps the message one line, and the cut never leaves
 * half an emoji or an escape) and said to be one, so `'100'` is not read as
 * the number 100; an array or object by kind; a function or class by kind
 * and name (`a function currentDeadline`, `the class ManualClock, not an
 * instance`); a BigInt said to be one (`100n (a BigInt)`); anything else
 * as `String` writes it, cut and escaped the same way. Shared by the option
 * checks of every package, so a bad option reads the same whichever package
 * refused it.
 */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return `'${shown(value)}' (a string)`
  if (isArray(value)) return 'an array'
  if (typeof value === 'object' && value !== null) return 'an object'
  // `String` of a function is its whole source: a class passed where its
  // instance belongs (`{ clock: ManualClock }`) put 2.6 KB — 19 KB for
  // `Deadline` — of code, over many lines, into the message.
  if (typeof value === 'function') return describeFunction(value)
  // Said to be one, as a string is: shown as String writes it, `1n` read as
  // the number 1 ("must be a positive share, got 1"). It may be any length.
  if (typeof value === 'bigint') return `${shown(`${value}n`)} (a BigInt)`
  // A symbol's description may hold a line break.
  return shown(String(value))
}

/**
 * `Array.isArray`, false where it throws: on a revoked Proxy ("Cannot perform
 * 'IsArray' on a proxy that has been revoked"), which then replaced the
 * refusal being written — thrown, not rejected, out of `wait` and `guard`.
 */
function isArray(value: unknown): boolean {
  try {
    return Array.isArray(value)
  } catch {
    return false
  }
}

function describeFunction(fn: object): string {
  let name: unknown
  let source = ''
  try {
    name = (fn as { name?: unknown }).name
    // Only whether it begins `class`: a Proxy or a bound function may throw.
    source = Function.prototype.toString.call(fn).slice(0, 6)
  } catch {
    // Hostile: shown by kind alone.
  }
  const named = typeof name === 'string' && name !== '' ? ` ${shown(name)}` : ''
  return /^class\b/.test(source) ? `the class${named}, not an instance` : `a function${named}`
}

function shown(text: string): string {
  return escapeUnprintable(cutText(text, 40))
}
