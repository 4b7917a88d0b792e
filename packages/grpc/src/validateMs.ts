import { optionError } from '@hourglass/core'

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
