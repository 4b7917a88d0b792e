/**
 * Cuts text into token-like pieces the way a model streams it: a Latin word
 * or number with its leading space, or a single other character (each CJK
 * character or emoji code point is its own piece). Joined, the pieces are
 * the text, byte for byte.
 */
export function splitTokens(text: string): string[] {
  if (text === '') return []
  const pieces = text.match(/\s*(?:[\p{Script=Latin}\p{N}_'’-]+|\S)|\s+$/gu) ?? [text]
  return pieces.join('') === text ? pieces : [text]
}
