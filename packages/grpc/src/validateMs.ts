import { MAX_TIMER_MS, optionError } from '@hourglass/core'

// Options are validated when an interceptor is created, with a message that names the field.

export function positive(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw optionError(name, 'a finite number of ms > 0', value)
  }
  return value
}

export function nonNegative(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw optionError(name, 'a finite number of ms ≥ 0', value)
  }
  return value
}

/** > 0 and at most 2^31−1 ms (the longest `grpc-timeout` grpc-js's server reads), or Infinity for none. */
export function positiveOrNone(name: string, value: number): number {
  if (value === Number.POSITIVE_INFINITY) return value
  if (typeof value !== 'number' || !(value > 0) || value > MAX_TIMER_MS) {
    throw optionError(name, `a number of ms > 0 and ≤ ${MAX_TIMER_MS}, or Infinity for none`, value)
  }
  return value
}
