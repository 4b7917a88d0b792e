import { ADAPTER_HEADERS, dialectHeaders } from '../config/replacedHeaders.js'
import { dialects } from '../llm.js'

/**
 * A provider's configured header values to scrub from log lines and error
 * bodies, as its keys are: every one but a value the gateway sends in that
 * header anyway — `content-type: application/json`, `accept-encoding:
 * identity` (any letter case, as the config accepts them), Anthropic's
 * `anthropic-version: 2023-06-01` —, which the config takes because
 * Anthropic's documented curl headers are copied so. Such a value is a
 * protocol constant, no secret: scrubbed, every text holding it lost it,
 * the gateway's own guidance too (`Content-Type: [redacted]` in the 400 for a
 * body of another type), and a provider's message naming the version or the
 * media type reached the client and the log with holes in it.
 */
export function secretHeaderValues(provider: {
  dialect: string
  headers?: Record<string, string> | undefined
}): string[] {
  const { dialect, headers } = provider
  if (headers === undefined) return []
  const own = Object.hasOwn(dialects, dialect)
    ? dialectHeaders(dialect as keyof typeof dialects)
    : {}
  const secrets: string[] = []
  for (const [header, value] of Object.entries(headers)) {
    const lower = header.toLowerCase()
    const adapter = Object.hasOwn(ADAPTER_HEADERS, lower) ? ADAPTER_HEADERS[lower] : undefined
    if (adapter !== undefined && value.toLowerCase() === adapter) continue
    if (Object.hasOwn(own, lower) && value === own[lower]) continue
    secrets.push(value)
  }
  return secrets
}
