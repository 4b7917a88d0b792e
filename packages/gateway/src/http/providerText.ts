import { cutText } from './cutText.js'

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
    // A proxy's page may name its upstream with credentials in it.
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, '$1[redacted]@')
    // Control and format characters (ANSI escapes, NUL, NEL, bidi
    // overrides) are nothing a client should print: a space, as a line break.
    .replace(/[\s\p{Cc}\p{Cf}\u2028\u2029]+/gu, ' ')
    .trim()
  if (line === '') return empty
  return cutText(line, maxChars)
}
