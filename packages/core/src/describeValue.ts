/**
 * A value as an option error shows it after "got": a string quoted (cut to
 * 40 characters) and said to be one, so `'100'` is not read as the number
 * 100; an array or object by kind; anything else as `String` writes it.
 * Shared by the option checks of every package, so a bad option reads the
 * same whichever package refused it.
 */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return `'${value.slice(0, 40)}' (a string)`
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'object' && value !== null) return 'an object'
  return String(value)
}
