/**
 * `text` with every character no client should print raw — C0 and C1
 * controls (line breaks, NUL, ESC, NEL), format characters (bidi
 * overrides, zero-width spaces, the BOM), line and paragraph separators, a
 * lone half of a surrogate pair — written as its JSON escape (`\n`,
 * `\u202e`). JSON escapes the C0 ones on the wire, but a client parses
 * them back and prints them; `JSON.stringify` leaves the rest raw. Escaped
 * rather than removed: a model "gpt-4o\n" does not exist where "gpt-4o"
 * does, and the client must see why. For a message that quotes anything,
 * a provider's words too (the gateway's error bodies): the format
 * characters that are parts of words (`IN_WORDS`) are left as they are.
 */
export function escapeUnprintable(text: string): string {
  return HIDDEN_ANY.test(text)
    ? text.replace(ESCAPED_ALL, (char, flag?: string) => flag ?? escapeOne(char))
    : text
}

/**
 * A value the caller sent (a model name, a stop sequence, a tool's name),
 * quoted in a refusal as JSON writes a string —
 * `"gpt-4o\n"` — with `escapeUnprintable`'s escapes and every other format
 * character's too (a zero-width joiner): a name is an id, and an invisible
 * character in it is why it is unknown. At most `maxChars` characters
 * inside the quotes: cut after a whole escape, never inside one.
 */
export function quoted(value: string, maxChars: number): string {
  let out = ''
  for (const char of value) {
    const shown = char === '"' || char === '\\' ? `\\${char}` : escapeId(char)
    if (out.length + shown.length > maxChars) return `"${out}…"`
    out += shown
  }
  return `"${out}"`
}

/**
 * `text` escaped as `quoted` escapes inside its quotes, without the quotes:
 * `escapeUnprintable`'s escapes and every other format character's too (a
 * zero-width joiner, a flag's tags), for what names something — an id, a
 * command-line argument, a path — where an invisible character is why it
 * is wrong. A `"` and a `\` stay as they are: with no JSON quotes around
 * it there is nothing to close, and a Windows path reads as typed.
 */
export function escapeId(text: string): string {
  return HIDDEN_OR_FORMAT_ANY.test(text) ? text.replace(HIDDEN_OR_FORMAT, escapeOne) : text
}

/**
 * The format characters that are parts of words, which a client prints as
 * the provider meant them: the zero-width non-joiner (Persian's
 * "می‌خواهم") and joiner (an emoji sequence's 👨‍👩‍👧; Indic conjuncts).
 * A character class's body.
 */
export const IN_WORDS = String.raw`\u200c\u200d`

/**
 * A subdivision's flag (🏴 and tag letters, ended by the cancel tag: the
 * Scotland flag), kept whole. Its tags anywhere else are hidden ASCII.
 */
export const FLAG_TAGS = String.raw`\u{1f3f4}[\u{e0020}-\u{e007e}]{1,32}\u{e007f}`

// Cs: a lone half of a surrogate pair (a whole pair is one code point under `u`).
const HIDDEN = String.raw`(?![${IN_WORDS}])[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]`
const HIDDEN_ANY = new RegExp(HIDDEN, 'u')
const ESCAPED_ALL = new RegExp(`(${FLAG_TAGS})|${HIDDEN}`, 'gu')
// escapeId's: every character HIDDEN matches and the format characters it spares.
const HIDDEN_OR_FORMAT_ANY = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/u
const HIDDEN_OR_FORMAT = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/gu

const SHORT: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }

function escapeOne(char: string): string {
  // By UTF-16 unit, as JSON escapes: a flag's tag U+E0067 is `\udb40\udc67`,
  // not a `\ue006` followed by a 7.
  return (
    SHORT[char] ??
    Array.from(
      { length: char.length },
      (_, i) => `\\u${char.charCodeAt(i).toString(16).padStart(4, '0')}`,
    ).join('')
  )
}
