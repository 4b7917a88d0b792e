import { optionError } from '@hourglass/core'

/*
 * Checks for the numbers the retry helpers are given. NaN slips through every
 * comparison (a NaN `max529Retries` never stops an overload loop, a NaN wait
 * is slept as 0), so a bad number is named and refused — a `RangeError` for a
 * number out of range (NaN included), a `TypeError` for no number at all —
 * as `callModel`'s option checks do. Untrusted values (a server's hint) are
 * clamped by their callers instead.
 */

/** A finite number ≥ 0; undefined = the default. */
export function finiteNonNegative(where: string, name: string, value: unknown): void {
  if (value === undefined || (typeof value === 'number' && value >= 0 && value < Infinity)) return
  refuse(where, name, value, 'a finite number ≥ 0')
}

/** A number ≥ 0, Infinity included ("no limit"); undefined = the default. */
export function nonNegative(where: string, name: string, value: unknown): void {
  if (value === undefined || (typeof value === 'number' && value >= 0)) return
  refuse(where, name, value, 'a number ≥ 0')
}

/** A number that is not NaN (±Infinity included); undefined = the default. */
export function notNaN(where: string, name: string, value: unknown): void {
  if (value === undefined || (typeof value === 'number' && !Number.isNaN(value))) return
  refuse(where, name, value, 'a number (not NaN)')
}

/** A whole number from 0 to `max`; undefined = the default. */
export function wholeNumberUpTo(where: string, name: string, value: unknown, max: number): void {
  if (
    value === undefined ||
    (Number.isSafeInteger(value) && (value as number) >= 0 && (value as number) <= max)
  ) {
    return
  }
  refuse(where, name, value, `a whole number from 0 to ${max}`)
}

/** A finite number ≥ `min`; required. */
export function finiteAtLeast(where: string, name: string, value: unknown, min: number): void {
  if (typeof value === 'number' && value >= min && value < Infinity) return
  refuse(where, name, value, `a finite number ≥ ${min}`)
}

function refuse(where: string, name: string, value: unknown, rule: string): never {
  throw optionError(`${where}: ${name}`, rule, value)
}
