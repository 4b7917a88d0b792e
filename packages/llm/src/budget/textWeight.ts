/**
 * Text's weight in quarter tokens, as the cost budget counts text without a
 * tokenizer: an ASCII character weighs 1 (chars / 4, English's rule of
 * thumb), any other character 4 — a whole token, because CJK text runs close
 * to one token per character and chars / 4 undercounts it four-fold. A
 * surrogate pair (an emoji) is one character. `Math.ceil(weight / 4)` is the
 * tokens: the prompt estimate (`estimatePromptTokens`) and output charged by
 * estimate (`deliveredTokens`) count by this one rule. Weights add up, so a
 * stream's deltas are weighed as they come and rounded once at the end.
 */
export function textWeight(text: string): number {
  let weight = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) {
      weight += 1
      continue
    }
    // A low surrogate on its own weighs nothing: its high half, at the end
    // of the delta before (a stream may split a pair), weighed the
    // character — weighed 4 again, a split emoji cost two tokens.
    if (c >= 0xdc00 && c <= 0xdfff) continue
    weight += 4
    // A high surrogate followed by a low one: one character, its low half weighs nothing.
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) i++
    }
  }
  return weight
}
