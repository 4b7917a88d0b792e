import { cutText } from './cutText.js'
import { escapeUnprintable } from './escapeUnprintable.js'

/**
 * A value as an option error shows it after "got": a string quoted (cut to
 * 40 characters, then escaped as `escapeUnprintable` escapes: a line break
 * shows as `\n` and keeps the message one line, and the cut never leaves
 * half an emoji or an escape) and said to be one, so `'100'` is not read as
 * the number 100; an array or object by kind; anything else as `String`
 * writes it. Shared by the option checks of every package, so a bad option
 * reads the same whichever package refused it.
 */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return `'${escapeUnprintable(cutText(value, 40))}' (a string)`
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'object' && value !== null) return 'an object'
  return String(value)
}
