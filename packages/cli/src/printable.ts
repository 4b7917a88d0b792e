/**
 * An argument to quote back in a one-line message: control characters
 * shown as `?` (a pasted newline or a terminal escape must not break the
 * line or reach the terminal), cut to `max` characters.
 */
export function printable(text: string, max = 40): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: replacing them is the point
  const shown = text.replace(/[\x00-\x1f\x7f-\x9f]/g, '?')
  if (shown.length <= max) return shown
  // Not between the two halves of a surrogate pair (an emoji): a lone half is no text.
  return `${shown.slice(0, max - 1).replace(/[\uD800-\uDBFF]$/, '')}…`
}
