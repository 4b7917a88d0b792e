import { cutText, FLAG_TAGS, IN_WORDS } from '@hourglass/core'

/** All of a provider's message a normalised error keeps (`NormalizedError.message`). */
export const MAX_PROVIDER_TEXT_CHARS = 500

/**
 * A provider's (or a proxy's) words as a user may be shown them: cleared of
 * anything key-shaped, put on one line (a proxy's page has several), cleared
 * of what no terminal or client should print, and at most `maxChars` long;
 * `empty` when nothing printable is left. Every normalised error's message,
 * `param` and code go through here, and so does every place that passes a
 * provider's text on (the gateway's error bodies): two cleaners are where
 * the next escape slips through.
 */
export function providerText(text: string, maxChars: number, empty = 'no reason given'): string {
  const line = printableLine(redactSecrets(text))
  return line === '' ? empty : cutText(line, maxChars)
}

/**
 * `text` on one line, trimmed: controls (ANSI escapes, NUL, BEL, NEL),
 * format characters (bidi overrides, zero-width spaces, the BOM), line and
 * paragraph separators and a lone half of a surrogate pair are nothing a
 * terminal or a client should print: a space, as a line break. Those that
 * are parts of words (a Persian zero-width non-joiner, an emoji's joiner, a
 * flag's tags) are kept, as `escapeUnprintable` keeps them. Run after
 * `redactSecrets`: a space put inside a URL's credentials would end them
 * where the pattern looks for their `@`.
 */
export function printableLine(text: string): string {
  // Most messages are printable words and single spaces: searched once,
  // not rewritten space by space. A flag's tags need the callback; nothing
  // else does.
  if (!NOT_PLAIN.test(text) && !text.includes('  ')) return text.trim()
  const line = text.includes(BLACK_FLAG)
    ? text.replace(HIDDEN_RUN_OR_FLAG, (_run, flag?: string) => flag ?? ' ')
    : text.replace(HIDDEN_RUN, ' ')
  return line.trim()
}

const HIDDEN = String.raw`(?![${IN_WORDS}])[\s\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]`
const HIDDEN_RUN = new RegExp(`(?:${HIDDEN})+`, 'gu')
const HIDDEN_RUN_OR_FLAG = new RegExp(`(${FLAG_TAGS})|(?:${HIDDEN})+`, 'gu')
/**
 * What `printableLine` changes besides the ends and two spaces: a hidden
 * character (`\s` but ' ' is Cc, Zl, Zp, the BOM and these spaces). One
 * class: an alternation with `[^\S ]` cost twice as much per message.
 */
const NOT_PLAIN = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]/u
const BLACK_FLAG = '\u{1f3f4}'

/**
 * Each pattern with a piece of text every match of it contains, when there
 * is one: a message without it is not searched (`includes` is a fast scan;
 * a pattern that starts with `\b` is tried at every word of up to 16 000
 * characters, and the URL one was most of a message's cleaning).
 */
const SECRET_PATTERNS: ReadonlyArray<readonly [RegExp, string, string | undefined]> = [
  [/\bsk-[A-Za-z0-9_*.-]{6,}/g, '[redacted]', 'sk-'],
  [/\bAIza[0-9A-Za-z_-]{10,}/g, '[redacted]', 'AIza'],
  // A credential: 8 characters or more with a digit or with both cases
  // (base64 of "user:pass" is dXNlcjpwYXNz), or 20 or more. "basic
  // auth_header" in a provider's `param` is words, not a secret.
  [
    // Case-sensitive (the cases of the token count): the scheme in its usual spellings.
    /\b([Bb]earer|BEARER|[Bb]asic|BASIC)\s+(?:(?:(?=[A-Za-z._~+/=-]*\d)|(?=[a-z0-9._~+/=-]*[A-Z])(?=[A-Z0-9._~+/=-]*[a-z]))[A-Za-z0-9._~+/=-]{8,}|[A-Za-z0-9._~+/=-]{20,})/g,
    '$1 [redacted]',
    undefined,
  ],
  [/\b(api[_-]?key|access_token|key)=[^&\s"']+/gi, '$1=[redacted]', '='],
  // The operator's organisation (OpenAI's "… in organization org-…", 24
  // letters and digits; not a provider's word such as "org-level").
  [/\borg-[A-Za-z0-9]{16,}/g, 'org-[redacted]', 'org-'],
  // A URL's credentials (a proxy naming its upstream), to the last `@`
  // before the host's end: a password may hold an `@`. The scheme is
  // bounded: unbounded, `\b` at every letter of "a.a.a.…" made it quadratic
  // (1 MB of it, minutes).
  [/\b([a-z][a-z0-9+.-]{0,31}:\/\/)[^\s/?#]+@/gi, '$1[redacted]@', '://'],
]

/**
 * `text` with anything key-shaped redacted — keys, tokens, organisation ids
 * and URL credentials — whatever key it is (a provider may echo another
 * client's). Before any cut: an id or URL the cut split matches no pattern
 * afterwards, and its first half would be shown.
 */
export function redactSecrets(text: string): string {
  let out = text
  for (const [pattern, replacement, needle] of SECRET_PATTERNS) {
    if (needle === undefined || out.includes(needle)) out = out.replace(pattern, replacement)
  }
  return out
}
