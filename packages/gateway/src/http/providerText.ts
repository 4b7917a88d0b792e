import { cutText } from './cutText.js'
import { FLAG_TAGS, IN_WORDS } from './escapeUnprintable.js'

/** A provider's message passed on whole: all llm keeps of it (its `cleanMessage`). */
export const MAX_PROVIDER_TEXT_CHARS = 500

/**
 * A provider's (or a proxy's) words as a client may be shown them, in an
 * error body: already cut and cleared of keys by llm, here put on one line
 * (a proxy's page has several), cleared of what no client should print, and
 * at most `maxChars` long. Every place that passes a provider's text on —
 * a refusal's message, `param` and code, a too-large refusal's reason —
 * goes through here: two cleaners are where the next escape slips through.
 */
export function providerText(text: string, maxChars: number, empty = 'no reason given'): string {
  const line = text
    // The operator's organisation (OpenAI's "… in organization org-…", 24
    // letters and digits; not a provider's word such as "org-level").
    .replace(/\borg-[A-Za-z0-9]{16,}/g, 'org-[redacted]')
    // A proxy's page may name its upstream with credentials in it: blanked
    // to the last `@` before the host's end (a password may hold an `@`).
    // The scheme is bounded: unbounded, `\b` at every letter of "a.a.a.…"
    // made this quadratic (1 MB of it, minutes). Not cut before: a URL the
    // cut split would no longer match, and its half would be shown.
    .replace(/\b([a-z][a-z0-9+.-]{0,31}:\/\/)[^\s/?#]+@/gi, '$1[redacted]@')
    // Controls (ANSI escapes, NUL, NEL), format characters (bidi overrides,
    // zero-width spaces, the BOM) and a lone half of a surrogate pair are
    // nothing a client should print: a space, as a line break. Those that
    // are parts of words (a Persian zero-width non-joiner, an emoji's joiner,
    // a flag's tags) are kept, as `escapeUnprintable` keeps them.
    .replace(HIDDEN_RUN, (_run, flag?: string) => flag ?? ' ')
    .trim()
  if (line === '') return empty
  return cutText(line, maxChars)
}

const HIDDEN_RUN = new RegExp(
  String.raw`(${FLAG_TAGS})|(?:(?![${IN_WORDS}])[\s\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}])+`,
  'gu',
)
