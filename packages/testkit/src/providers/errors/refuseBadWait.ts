import { optionError } from '@hourglass/core'

/**
 * Refuses a builder's wait (`retryAfterS`, `retryAfterMs`) that is not a
 * finite number from 0 to `max`, naming the builder and the option. Written
 * as it came, NaN scripted `retry-after: NaN` and a reset "in NaNs" — a
 * client reading it waits nothing — and Anthropic's reset time threw
 * "Invalid time value" far from the call; so did 9e12 s, past the largest
 * Date, and 1e308 s wrote a reset of "InfinityhNaNmNaNs" (1e22 s a
 * `retry-after: 1e+22`, no delay-seconds); a string ('5') was concatenated
 * into the waits. 1e9 s (31 years) is far beyond any wait a test scripts.
 */
export function refuseBadWait(where: string, name: string, value: unknown, max: number): void {
  if (value === undefined) return
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > max) {
    throw optionError(`${where}: ${name}`, `a number from 0 to ${max}`, value)
  }
}

/** The largest `retryAfterS` a builder takes (31 years). */
export const MAX_WAIT_S = 1e9
