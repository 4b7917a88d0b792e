import type { RateLimitedBy } from '../types.js'
import { type HeaderInput, headerValue } from './errorHeaders.js'

/** The remaining-count headers that name a token limit (OpenAI and its imitators, Anthropic). */
const TOKEN_HEADERS = [
  'x-ratelimit-remaining-tokens',
  'anthropic-ratelimit-tokens-remaining',
  'anthropic-ratelimit-input-tokens-remaining',
  'anthropic-ratelimit-output-tokens-remaining',
]
/** … and a request limit. */
const REQUEST_HEADERS = ['x-ratelimit-remaining-requests', 'anthropic-ratelimit-requests-remaining']

/**
 * Which limit a rate limit hit, from the response headers: the one whose
 * remaining count is 0 (`x-ratelimit-remaining-tokens: 0`,
 * `anthropic-ratelimit-input-tokens-remaining: 0`, …). Undefined when none
 * is at 0, or both kinds are (either could be what refused this request).
 */
export function limitedByHeaders(headers: HeaderInput | undefined): RateLimitedBy | undefined {
  const tokens = TOKEN_HEADERS.some((name) => isZero(headerValue(headers, name)))
  const requests = REQUEST_HEADERS.some((name) => isZero(headerValue(headers, name)))
  if (tokens === requests) return undefined
  return tokens ? 'tokens' : 'requests'
}

/**
 * Which limit a rate limit hit, from the provider's words (its first 500
 * characters: all a message keeps): "tokens per min (TPM)", "30,000 input
 * tokens per minute", "Number of request tokens has exceeded…" name tokens;
 * "requests per min (RPM)", "Number of requests has exceeded…" requests. Undefined when it names neither, or both.
 */
export function limitedByText(text: string | undefined): RateLimitedBy | undefined {
  if (text === undefined) return undefined
  const t = text.slice(0, 500)
  const tokens = TOKENS_TEXT.test(t)
  const requests = REQUESTS_TEXT.test(t)
  if (tokens === requests) return undefined
  return tokens ? 'tokens' : 'requests'
}

// No nested or overlapping quantifiers: linear on any text.
const TOKENS_TEXT = /\btokens (?:per|has exceeded)\b|\b(?:tpm|tpd|itpm|otpm)\b/i
const REQUESTS_TEXT = /\brequests (?:per|has exceeded)\b|\b(?:rpm|rpd)\b/i

/**
 * Which limit a rate limit hit, from the provider's code where the code
 * names it: ERNIE's 336501 (RPM) and 336502 (TPM), 18 (QPS) and its
 * `rpm_`/`tpm_rate_limit_exceeded`; Doubao's
 * `ModelAccountRpm…`/`ModelAccountTpm…`, `…EndpointRPMExceeded`/`…TPMExceeded`;
 * DashScope's `Throttling.RateQuota` (requests) and
 * `Throttling.AllocationQuota` (tokens). Undefined for any other code.
 */
export function limitedByCode(code: string | undefined): RateLimitedBy | undefined {
  if (code === undefined) return undefined
  if (code === '336502' || code === 'Throttling.AllocationQuota' || TPM_CODE.test(code))
    return 'tokens'
  if (code === '336501' || code === '18' || code === 'Throttling.RateQuota' || RPM_CODE.test(code))
    return 'requests'
  return undefined
}

// A code that spells the limit's abbreviation as a word or CamelCase part.
const TPM_CODE = /(?:^|[^a-z])tpm|Tpm|TPM/
const RPM_CODE = /(?:^|[^a-z])(?:rpm|qpm|qps)|Rpm|RPM|Qpm|QPM|Qps|QPS/

/** `0` as a count (surrounding spaces allowed); anything else, absent included, is not. */
function isZero(value: string | undefined): boolean {
  return value !== undefined && value.trim() === '0'
}
