/**
 * The credential after an auth scheme in a header value — `tok-…` of
 * `Bearer tok-…`, `Token …`, `Basic …` — or undefined when the value has no
 * scheme word before it. What a provider echoes in an error ("token tok-… is
 * not allowed") is that part alone, so a redaction that searched only for
 * the whole value missed it. One reading for @hourglass/llm's key redaction
 * and the gateway's log scrub.
 */
export function schemeCredential(value: string): string | undefined {
  return SCHEME.exec(value)?.[1]
}

/** A scheme word (RFC 9110 §11.1's token, as used), whitespace, then the credential. */
const SCHEME = /^[A-Za-z][\w-]*\s+(\S.*)$/
