/**
 * `text` with every character no client should print raw — C0 and C1
 * controls (line breaks, NUL, ESC, NEL), format characters (bidi
 * overrides, zero-widths), line and paragraph separators, a lone half of a
 * surrogate pair — written as its JSON escape (`\n`, `\u202e`). JSON
 * escapes the C0 ones on the wire, but a client parses them back and prints
 * them; `JSON.stringify` leaves the rest raw. Escaped rather than removed:
 * a model "gpt-4o\n" does not exist where "gpt-4o" does, and the client
 * must see why. Every error message and `param` the gateway writes goes
 * through here (`errorReply`), whatever it quotes.
 */
export function escapeUnprintable(text: string): string {
  return UNPRINTABLE_ANY.test(text) ? text.replace(UNPRINTABLE_ALL, escapeOne) : text
}

/**
 * A value the client sent (a model name), quoted as JSON writes a string —
 * `"gpt-4o\n"` — with `escapeUnprintable`'s escapes, and at most `maxChars`
 * characters inside the quotes: cut after a whole escape, never inside one.
 */
export function quoted(value: string, maxChars: number): string {
  let out = ''
  for (const char of value) {
    const shown = char === '"' || char === '\\' ? `\\${char}` : escapeUnprintable(char)
    if (out.length + shown.length > maxChars) return `"${out}…"`
    out += shown
  }
  return `"${out}"`
}

// Cs: a lone half of a surrogate pair (a whole pair is one code point under `u`).
const UNPRINTABLE = String.raw`[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]`
const UNPRINTABLE_ANY = new RegExp(UNPRINTABLE, 'u')
const UNPRINTABLE_ALL = new RegExp(UNPRINTABLE, 'gu')

const SHORT: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }

function escapeOne(char: string): string {
  return SHORT[char] ?? `\\u${(char.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`
}
