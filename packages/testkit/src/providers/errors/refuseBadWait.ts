import { optionError } from '@hourglass/core'

/**
 * Refuses a builder's wait (`retryAfterS`, `retryAfterMs`) that is not a
 * finite number ≥ 0, naming the builder and the option. Written as it came,
 * NaN scripted `retry-after: NaN` and a reset "in NaNs" — a client reading
 * it waits nothing — and Anthropic's reset time threw "Invalid time value"
 * far from the call; a string ('5') was concatenated into the waits.
 */
export function refuseBadWait(where: string, name: string, value: unknown): void {
  if (value === undefined) return
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw optionError(`${where}: ${name}`, 'a finite number ≥ 0', value)
  }
}
