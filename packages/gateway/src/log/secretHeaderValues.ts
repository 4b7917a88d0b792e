import { sentAnyway } from '../config/replacedHeaders.js'

/**
 * A provider's configured header values to scrub from log lines and error
 * bodies, as its keys are: every one but a value the gateway sends in that
 * header anyway (`sentAnyway`: `content-type: application/json`,
 * `accept-encoding: identity`, Anthropic's `anthropic-version:
 * 2023-06-01`), which the config takes because Anthropic's documented curl
 * headers are copied so. Such a value is a protocol constant, no secret:
 * scrubbed, every text holding it lost it, the gateway's own guidance too
 * (`Content-Type: [redacted]` in the 400 for a body of another type), and a
 * provider's message naming the version or the media type reached the
 * client and the log with holes in it.
 */
export function secretHeaderValues(provider: {
  dialect: string
  headers?: Record<string, string> | undefined
}): string[] {
  const { dialect, headers } = provider
  if (headers === undefined) return []
  const secrets: string[] = []
  for (const [header, value] of Object.entries(headers)) {
    if (!sentAnyway(dialect, header, value)) secrets.push(value)
  }
  return secrets
}
