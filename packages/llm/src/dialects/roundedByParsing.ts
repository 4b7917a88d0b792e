/**
 * Whether parsing the JSON `text` rounds one of its integer literals: a
 * number written without fraction or exponent whose value a double cannot
 * hold (an order id `9007199254740993` reads `…992`). Read from the text,
 * not the parsed value: `1e20`, `6.022e23` or `9007199254740992` itself are
 * parsed exactly as written, and a value past 2^53 alone cannot tell a
 * rounded id from a magnitude the tool takes as a number on purpose.
 * Strings are skipped (their digits are text). Text that is not JSON reads
 * as rounding nothing: its parse has failed already.
 */
export function roundsAnInteger(text: string): boolean {
  return someLongInteger(text, (literal) => BigInt(literal) !== BigInt(Number(literal)))
}

/**
 * Whether writing the JSON `text` again once parsed changes the digits of one
 * of its integer literals: every integer `roundsAnInteger` finds, and also
 * one a double holds exactly whose shortest form has other digits — a tweet
 * id `1859312345678901248` (a double exactly) is written `…901200`, 2^60
 * `1152921504606847000`. A client that reads integers exactly (Python, Go's
 * `json.Number`, a Java `long`) got another id: what keeps a call's text.
 */
export function rewritesAnInteger(text: string): boolean {
  return someLongInteger(text, (literal) => String(Number(literal)) !== literal)
}

/**
 * Whether `test` holds for one of the JSON `text`'s plain integer literals of
 * more than 15 digits (fewer always read, and are written, exactly). Strings
 * are skipped (their digits are text).
 */
function someLongInteger(text: string, test: (literal: string) => boolean): boolean {
  const length = text.length
  let i = 0
  while (i < length) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      i++
      while (i < length && text.charCodeAt(i) !== QUOTE)
        i += text.charCodeAt(i) === BACKSLASH ? 2 : 1
      i++
      continue
    }
    if (c === MINUS || (c >= ZERO && c <= NINE)) {
      NUMBER.lastIndex = i
      const match = NUMBER.exec(text)
      if (match === null) return false
      const [literal, digits, fractionOrExponent] = match
      // At most 15 digits always read exactly; only a plain integer can round.
      if (!fractionOrExponent && (digits as string).length > 15 && test(literal)) return true
      i += literal.length
      continue
    }
    i++
  }
  return false
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const MINUS = 0x2d
const ZERO = 0x30
const NINE = 0x39
/** A JSON number: its integer digits, then any fraction or exponent. */
const NUMBER = /-?(\d+)((?:\.\d+)?(?:[eE][+-]?\d+)?)?/y
