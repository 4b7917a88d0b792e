import { dialects } from '../llm.js'
import { isQuoted } from './isQuoted.js'

/**
 * The names, as written, of a provider's configured headers that are its
 * credential wrapped in quotes: the dialect's key header (`authorization`,
 * Anthropic's `x-api-key`, Gemini's `x-goog-api-key`), which with no
 * `apiKeys` is sent as configured — in quotes (an env file read by `docker
 * run --env-file` keeps them), every request a 401, as a quoted key in
 * `apiKeys` was before it was refused. Quoted as a whole (`"Bearer sk-…"`)
 * or after the dialect's scheme (`Bearer "sk-…"`: a bearer token has no
 * quote in its syntax, RFC 6750 §2.1). Azure OpenAI's `api-key` too, with
 * `apiKeys` or without (`OTHER_KEY_HEADERS`). Only key headers: another
 * header's value may be anything its receiver reads, quotes and all.
 *
 * Beside `apiKeys` the key header is refused already (`replacedHeaders`):
 * not said twice. `provider` may be partly invalid (the schema runs this
 * with the entry's other problems), hence the `unknown`s.
 */
export function quotedKeyHeaders(provider: {
  dialect?: unknown
  apiKeys?: unknown
  headers?: unknown
}): string[] {
  const { dialect, apiKeys, headers } = provider
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) return []
  /** Key header (lower case) → what comes before the key in it (`Bearer `, or nothing). */
  const schemes = new Map<string, string>(OTHER_KEY_HEADERS.map((header) => [header, '']))
  // As `replacedHeaders` reads it: a lone key where the list belongs is a key too.
  const withKeys = Array.isArray(apiKeys)
    ? apiKeys.length > 0
    : apiKeys !== undefined && apiKeys !== null && apiKeys !== ''
  if (!withKeys && typeof dialect === 'string' && Object.hasOwn(dialects, dialect)) {
    const sent = dialects[dialect as keyof typeof dialects].authHeaders(KEY)
    for (const [header, value] of Object.entries(sent)) {
      schemes.set(header.toLowerCase(), value.slice(0, value.indexOf(KEY)).toLowerCase())
    }
  }
  const found: string[] = []
  for (const [header, value] of Object.entries(headers as Record<string, unknown>)) {
    const scheme = schemes.get(header.toLowerCase())
    if (scheme === undefined || typeof value !== 'string') continue
    const credential = value.toLowerCase().startsWith(scheme) ? value.slice(scheme.length) : value
    if (isQuoted(value) || isQuoted(credential)) found.push(header)
  }
  return found
}

/**
 * Key headers no dialect sends, read by the providers behind one: Azure
 * OpenAI's `api-key` (under `dialect: "openai"`). Sent as configured,
 * beside `apiKeys` or without them, so checked either way.
 */
const OTHER_KEY_HEADERS = ['api-key']

const KEY = '<key>'
