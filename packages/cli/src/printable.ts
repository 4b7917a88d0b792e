/**
 * Control characters (C0 and C1: a terminal escape), format characters (bidi
 * overrides and isolates, zero-width and invisible ones), the line and
 * paragraph separators, and half a surrogate pair: what hides, reorders or
 * splits a line in a terminal, or is no text at all.
 */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu

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
