// Options are validated when an interceptor is created, with a message that names the field.

export function positive(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new RangeError(`${name} must be a finite number of ms > 0, got ${String(value)}`)
  }
  return value
}

export function nonNegative(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new RangeError(`${name} must be a finite number of ms ≥ 0, got ${String(value)}`)
  }
  return value
}
