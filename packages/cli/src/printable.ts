/**
 * Control characters, and what reorders or splits a line in a terminal:
 * bidi overrides and isolates, zero-width characters, the line and
 * paragraph separators.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
const UNPRINTABLE = /[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]/g

/**
 * An argument to quote back in a one-line message: what `UNPRINTABLE`
 * matches shown as `?` (a pasted newline or a terminal escape must not break
 * the line or reach the terminal), cut to `max` characters.
 */
export function printable(text: string, max = 40): string {
  const shown = text.replace(UNPRINTABLE, '?')
  if (shown.length <= max) return shown
  // Not between the two halves of a surrogate pair (an emoji): a lone half is no text.
  return `${shown.slice(0, max - 1).replace(/[\uD800-\uDBFF]$/, '')}…`
}
