import type { ConfigProblem } from '../config/GatewayConfigError.js'
import type { GatewayConfig } from '../config/gatewayConfigSchema.js'
import { dialects } from '../llm.js'

type ProviderEntry = GatewayConfig['providers'][string]

/**
 * Headers llm's adapter writes on every request with its own value, over
 * the configured extra headers (its `headers` option says so): the body's
 * type, what it accepts, no content coding, the attempt's idempotency key.
 */
const ADAPTER_HEADERS = ['content-type', 'accept', 'accept-encoding', 'idempotency-key']

/** The smallest request a dialect builds: only the headers it adds are read. */
const PROBE = { messages: [{ role: 'user' as const, content: 'x' }], maxTokens: 1 }

/**
 * The first of a provider's configured `headers` that would never be sent,
 * as a config problem: one the adapter writes itself on every request, a
 * header the dialect's request carries (Anthropic's `anthropic-version`),
 * or, beside `apiKeys`, the dialect's key header (`Authorization`,
 * `x-api-key`, `x-goog-api-key`), which the key from `apiKeys` replaces.
 * Accepted, such a header was dropped without a word: an `Authorization`
 * for a proxy in front of the provider went out as `Bearer <key>`, the
 * proxy answered 401, and the keys were retired. With no `apiKeys` the key
 * header is the credential, and is sent.
 */
export function replacedHeader(name: string, provider: ProviderEntry): ConfigProblem | undefined {
  const headers = Object.keys(provider.headers ?? {})
  if (headers.length === 0) return undefined
  const keyHeaders = dialects[provider.dialect].authHeaders('<key>')
  const own = dialectHeaders(provider.dialect)
  for (const header of headers) {
    const lower = header.toLowerCase()
    const field = `providers.${name}.headers.${header}`
    const key = keyHeaders[lower]
    if (key !== undefined && provider.apiKeys.length > 0) {
      return {
        field,
        message: `cannot be set beside apiKeys: each request carries the key from apiKeys in it (${header}: ${key}), which replaces this value, so it would never be sent; put the credential in apiKeys, or leave apiKeys empty to send this header`,
      }
    }
    if (ADAPTER_HEADERS.includes(lower)) {
      return {
        field,
        message:
          'cannot be set: the adapter sends its own on every request, which replaces this value, so it would never be sent',
      }
    }
    const value = own[lower]
    if (value !== undefined) {
      return {
        field,
        message: `cannot be set: the ${provider.dialect} dialect sends its own (${header}: ${value}), which replaces this value, so it would never be sent`,
      }
    }
  }
  return undefined
}

/** The headers a dialect's request builder adds, names lower case. */
function dialectHeaders(dialect: ProviderEntry['dialect']): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const [header, value] of Object.entries(
    dialects[dialect].buildRequest(PROBE, 'model').headers ?? {},
  )) {
    headers[header.toLowerCase()] = value
  }
  return headers
}
