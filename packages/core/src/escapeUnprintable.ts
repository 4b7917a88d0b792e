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
  return HIDDEN_ANY.test(text) ? escapeHidden(text, false) : text
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
  return HIDDEN_OR_FORMAT_ANY.test(text) ? escapeHidden(text, true) : text
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
// escapeId's: every character HIDDEN matches and the format characters it spares.
const HIDDEN_OR_FORMAT_ANY = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/u
// Read at one position (sticky): whether the character there is hidden,
// whether a flag starts there.
const HIDDEN_OR_FORMAT_AT = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/uy
const FLAG_AT = new RegExp(FLAG_TAGS, 'uy')
const BLACK_FLAG = 0x1f3f4
const ZWNJ = 0x200c
const ZWJ = 0x200d

/**
 * `text` with each hidden character escaped (`escapeAt`), the two in
 * `IN_WORDS` too when `inWords`, and a subdivision's flag kept whole unless
 * `inWords`. One pass over the text, each character read once: a
 * `replace` with a callback per character took 1.4 s on a million of them
 * (a hostile model name, a provider's error body), for the same output.
 */
function escapeHidden(text: string, inWords: boolean): string {
  let out = ''
  // The start of the text not yet copied: copied a run at a time.
  let copied = 0
  for (let i = 0; i < text.length; ) {
    const code = codePointAt(text, i)
    const size = code > 0xffff ? 2 : 1
    if (code === BLACK_FLAG && !inWords) {
      FLAG_AT.lastIndex = i
      if (FLAG_AT.test(text)) {
        i = FLAG_AT.lastIndex
        continue
      }
    }
    if (isHidden(text, i, code) && (inWords || (code !== ZWNJ && code !== ZWJ))) {
      // A run of the same character (padding of zero-width spaces, a
      // flood of NULs) escaped once and repeated.
      let end = i + size
      while (end < text.length && codePointAt(text, end) === code) end += size
      out += text.slice(copied, i) + escapeAt(text, i, code, size).repeat((end - i) / size)
      copied = end
      i = end
      continue
    }
    i += size
  }
  return out + text.slice(copied)
}

/** Whether the character `code` at `i` is Cc, Cf, Cs, Zl or Zp. */
function isHidden(text: string, i: number, code: number): boolean {
  // Printable ASCII, most of any text, decided without the regex.
  if (code < 0x7f) return code < 0x20
  if (code < 0xa0) return true // DEL and the C1 controls
  if (code < 0xad) return false
  if (code >= 0xd800 && code <= 0xdfff) return true // a lone half (a pair reads as one code point)
  HIDDEN_OR_FORMAT_AT.lastIndex = i
  return HIDDEN_OR_FORMAT_AT.test(text)
}

const SHORT: Readonly<Record<number, string>> = { 10: '\\n', 13: '\\r', 9: '\\t' }

function escapeAt(text: string, i: number, code: number, size: number): string {
  const short = SHORT[code]
  if (short !== undefined) return short
  // By UTF-16 unit, as JSON escapes: a flag's tag U+E0067 is `\udb40\udc67`,
  // not a `\ue006` followed by a 7.
  return size === 1 ? unit(code) : unit(text.charCodeAt(i)) + unit(text.charCodeAt(i + 1))
}

// Each UTF-16 unit's escape, made once (at most 65,536, a few in practice):
// a hostile text repeats a few hidden characters between its letters.
const UNITS: string[] = []

function unit(code: number): string {
  UNITS[code] ??= `\\u${code.toString(16).padStart(4, '0')}`
  return UNITS[code]
}

/**
 * The code point at `i`, read unit by unit. Node 24's V8, once the caller is
 * optimised, has `String.prototype.codePointAt` pair a lead surrogate at the
 * end of a sliced string (one sharing its parent's memory, 13 units or more)
 * with the parent's next unit: a text cut inside an emoji was escaped as
 * `\ud83d\u0NaN` about once in 60 calls. Node 20 and 22 read it right.
 */
function codePointAt(text: string, i: number): number {
  const lead = text.charCodeAt(i)
  if (lead < 0xd800 || lead > 0xdbff || i + 1 >= text.length) return lead
  const trail = text.charCodeAt(i + 1)
  return trail >= 0xdc00 && trail <= 0xdfff
    ? (lead - 0xd800) * 0x400 + (trail - 0xdc00) + 0x10000
    : lead
}
