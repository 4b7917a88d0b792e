import { schemeCredential } from '@hourglass/core'
import { sentAnyway } from '../config/replacedHeaders.js'

/**
 * Headers whose values the providers document as public settings, never a
 * credential: Anthropic's `anthropic-beta` (feature names such as
 * `context-1m-2025-08-07`), OpenAI's `OpenAI-Beta`, and OpenRouter's app
 * attribution, `HTTP-Referer` and `X-Title` (shown on its public
 * rankings). Scrubbed like keys, Anthropic's 400 for a beta it does not
 * know ("Unexpected value(s) `…` for the `anthropic-beta` header") reached
 * the client and the log as `[redacted]`: every request refused, and the
 * value at fault hidden from the operator who set it; and an app's title,
 * often a plain word, was cut out of every log line and error holding it.
 */
const PUBLIC_HEADERS: ReadonlySet<string> = new Set([
  'anthropic-beta',
  'openai-beta',
  'http-referer',
  'x-title',
])

/**
 * A boolean setting (`Helicone-Cache-Enabled: true`): a credential is never
 * the word `true` or `false`.
 */
const BOOLEAN = /^(?:true|false)$/i

/** Shorter than this, the part after a scheme is not searched for (llm's MIN_REDACTED_KEY_CHARS). */
const MIN_TOKEN_CHARS = 8

/**
 * The configured header values to scrub from log lines and error bodies, as
 * the keys are: every one but a value the gateway sends in that header
 * anyway (`sentAnyway`: `content-type: application/json`,
 * `accept-encoding: identity`, Anthropic's `anthropic-version:
 * 2023-06-01`), which the config takes because Anthropic's documented curl
 * headers are copied so, and a public setting's (`PUBLIC_HEADERS`). Such a
 * value is a protocol constant, no secret: scrubbed, every text holding it
 * lost it, the gateway's own guidance too (`Content-Type: [redacted]` in
 * the 400 for a body of another type), and a provider's message naming the
 * version or the media type reached the client and the log with holes in it.
 * Nor is a name the gateway shows anyway (`published`, see `publishedNames`)
 * or `true`/`false`: the settings of a proxy put in front of a provider
 * (Helicone's `Helicone-Cache-Enabled: true`, a routing header naming the
 * provider), which scrubbed took the word out of every string.
 */
export function secretHeaderValues(
  providers: Readonly<
    Record<string, { dialect: string; headers?: Record<string, string> | undefined }>
  >,
  published: ReadonlySet<string>,
): string[] {
  const secrets: string[] = []
  for (const { dialect, headers } of Object.values(providers)) {
    for (const [header, value] of Object.entries(headers ?? {})) {
      if (PUBLIC_HEADERS.has(header.toLowerCase())) continue
      if (published.has(value) || BOOLEAN.test(value)) continue
      if (sentAnyway(dialect, header, value)) continue
      secrets.push(value)
      // `Bearer <token>`: the token alone is what a provider echoes ("token …
      // is not allowed"). @hourglass/llm's adapter searches for it only under
      // a header whose name says credential (`authorization`, `x-api-key`…);
      // the gateway treats every header value as a secret, whatever its name.
      const token = schemeCredential(value)
      if (token !== undefined && token.length >= MIN_TOKEN_CHARS && !published.has(token)) {
        secrets.push(token)
      }
    }
  }
  return secrets
}
