import { cutText, escapeId } from '@hourglass/core'

/**
 * An argument to quote back in a one-line message, cut to `max` characters
 * (never inside an emoji) and then shown by core's rule for a name
 * (`escapeId`, `quoted`'s escapes without its quotes): every control,
 * format or separator character as its escape, `\n`, `\u001b`, `\u202e`. A
 * pasted newline or a terminal escape must not break the line or reach the
 * terminal, and the user sees which character made the argument wrong. Cut
 * before escaping, so no escape is cut in half.
 */
export function printable(text: string, max = 40): string {
  return escapeId(cutText(text, max))
}
