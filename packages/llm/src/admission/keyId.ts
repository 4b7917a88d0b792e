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
 * of its SHA-256, trailing slashes ignored): two providers of one name at two
 * URLs cool down apart, and a URL (which may carry a tenant or a token) never
 * appears in a Redis key name.
 */
export function endpointId(baseURL: string): string {
  let id = endpointIds.get(baseURL)
  if (id === undefined) {
    const url = baseURL.replace(/\/+$/, '')
    id = `e${createHash('sha256').update(url).digest('hex').slice(0, 10)}`
    // A process talks to a handful of endpoints: remember each (asked on every attempt).
    if (endpointIds.size >= 1000) endpointIds.clear()
    endpointIds.set(baseURL, id)
  }
  return id
}

const endpointIds = new Map<string, string>()
