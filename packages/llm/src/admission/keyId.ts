import { createHash } from 'node:crypto'

/** The id used when a provider is called without keys (one provider-wide cooldown). */
export const NO_KEY_ID = '-'

/**
 * A short, non-reversible id for an API key, safe for events, errors, logs and
 * Redis key names: the first 12 hex digits (48 bits) of its SHA-256. The same
 * key gets the same id in every process, so a fleet sharing a store agrees on
 * which key is cooling without any process seeing another's keys.
 */
export function keyId(key: string | undefined): string {
  if (key === undefined || key === '') return NO_KEY_ID
  return `k${createHash('sha256').update(key).digest('hex').slice(0, 12)}`
}

/**
 * A short, non-reversible id for a provider's base URL (`e` + 10 hex digits
 * of its SHA-256 of `canonicalEndpoint`): two providers of one name at two
 * URLs cool down apart, and a URL (which may carry a tenant or a token) never
 * appears in a Redis key name.
 */
export function endpointId(baseURL: string): string {
  let id = endpointIds.get(baseURL)
  if (id === undefined) {
    const url = canonicalEndpoint(baseURL)
    id = `e${createHash('sha256').update(url).digest('hex').slice(0, 10)}`
    // A process talks to a handful of endpoints: remember each (asked on every attempt).
    if (endpointIds.size >= 1000) endpointIds.clear()
    endpointIds.set(baseURL, id)
  }
  return id
}

const endpointIds = new Map<string, string>()

/**
 * One spelling per endpoint: the scheme and host lower-cased, the scheme's
 * default port dropped (as WHATWG URL parsing does) and trailing slashes
 * ignored; the path kept as written (it is case-sensitive). Spelled
 * `https://API.openai.com:443/v1/` by one adapter and
 * `https://api.openai.com/v1` by another, one endpoint had two sets of
 * cooldowns and two retry budgets: a 429 on one held nobody on the other
 * back. A URL already in that form is unchanged (so are its ids in a
 * shared store); one that does not parse is only trimmed of its slashes.
 */
export function canonicalEndpoint(baseURL: string): string {
  let canonical = canonicalURLs.get(baseURL)
  if (canonical === undefined) {
    let url = baseURL
    try {
      url = new URL(baseURL).href
    } catch {
      // Not a URL: an adapter refuses it before sending; any id will do.
    }
    canonical = url.replace(/\/+$/, '')
    // Asked on every attempt (the retry budget's name): parsed once per URL.
    if (canonicalURLs.size >= 1000) canonicalURLs.clear()
    canonicalURLs.set(baseURL, canonical)
  }
  return canonical
}

const canonicalURLs = new Map<string, string>()
