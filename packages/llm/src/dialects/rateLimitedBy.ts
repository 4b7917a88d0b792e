import { firstMember } from '@hourglass/core'
import type { RateLimitedBy } from '../types.js'
import { type HeaderInput, headerValue } from './errorHeaders.js'

/** The remaining-count headers that name a token limit, exact counts (OpenAI and its imitators). */
const TOKEN_HEADERS = ['x-ratelimit-remaining-tokens']
/**
 * Anthropic's token counts, "rounded to the nearest thousand"
 * (docs.claude.com/en/api/rate-limits): their "0" is anything under 500
 * left, not a spent limit.
 */
const ROUNDED_TOKEN_HEADERS = [
  'anthropic-ratelimit-tokens-remaining',
  'anthropic-ratelimit-input-tokens-remaining',
  'anthropic-ratelimit-output-tokens-remaining',
]
/** … and a request limit: exact counts everywhere. */
const REQUEST_HEADERS = ['x-ratelimit-remaining-requests', 'anthropic-ratelimit-requests-remaining']

/**
 * Which limit a rate limit hit, from the response headers: the one whose
 * remaining count is 0 (`x-ratelimit-remaining-tokens: 0`,
 * `anthropic-ratelimit-input-tokens-remaining: 0`, …). A request count at 0
 * refuses any request, so it outweighs a rounded token count that reads 0
 * (Anthropic's; it may hold hundreds): that 429 was the request limit's.
 * Undefined when none is at 0, or exact counts of both kinds are (either
 * could be what refused this request).
 */
export function limitedByHeaders(headers: HeaderInput | undefined): RateLimitedBy | undefined {
  const requests = REQUEST_HEADERS.some((name) => isZero(headerValue(headers, name)))
  const tokens =
    TOKEN_HEADERS.some((name) => isZero(headerValue(headers, name))) ||
    (!requests && ROUNDED_TOKEN_HEADERS.some((name) => isZero(headerValue(headers, name))))
  if (tokens === requests) return undefined
  return tokens ? 'tokens' : 'requests'
}

/**
 * Which limit a rate limit hit, from the provider's words (its first 500
 * characters: all a message keeps), links left out — a host or path is no
 * word of the provider's ("…/limits/tps"). Tokens: "tokens per min (TPM)",
 * "30,000 input tokens per minute", "Number of request tokens has
 * exceeded…", the abbreviations TPM, TPS (tokens per second), TPD, and
 * Gemini's metric names (`…_input_token_count`). Requests: "requests per min
 * (RPM)", "Number of requests has exceeded…", DashScope's "Requests rate
 * limit exceeded" and "Request rate increased too quickly", RPM, RPS, QPS,
 * QPM (queries), "queries per second", Gemini's `…_tier_requests`,
 * `…_requests_per_minute…` (not any `_requests`: "too_many_requests" is
 * every 429's name). An
 * abbreviation counts only as a word of its own ("https" holds no TPS); TPS
 * spelled out as "transactions per second" — what the word means outside
 * model APIs — counts requests. Undefined when it names neither, or both.
 */
export function limitedByText(text: string | undefined): RateLimitedBy | undefined {
  if (text === undefined) return undefined
  const t = text.slice(0, 500).replace(LINK, ' ')
  const transactions = TRANSACTIONS_TEXT.test(t)
  const tokens = TOKENS_TEXT.test(t) || (!transactions && TPS_TEXT.test(t))
  const requests = transactions || REQUESTS_TEXT.test(t)
  if (tokens === requests) return undefined
  return tokens ? 'tokens' : 'requests'
}

// No nested or overlapping quantifiers: linear on any text.
// A link ends where URL characters do, and at punctuation prose puts after one (`,`, `;`, `)`): "…/error-code),TPM …" keeps its TPM.
const LINK = /\bhttps?:\/\/[\w\-.~:/?#[\]@&=%]*/gi
// Azure OpenAI names its two limits "token rate limit" and "call rate limit"
// ("… have exceeded token rate limit of your current OpenAI S0 pricing tier").
const TOKENS_TEXT =
  /\btokens (?:per|has exceeded)\b|\btoken rate limit\b|\b(?:tpm|tpd|itpm|otpm)\b|_token_count\b|_tokens_per_/i
const TPS_TEXT = /\btps\b/i
const TRANSACTIONS_TEXT = /\btransactions per second\b/i
const REQUESTS_TEXT =
  /\brequests (?:per|has exceeded)\b|\brequests? rate\b|\bcall rate limit\b|\bqueries per\b|\b(?:rpm|rpd|rps|qps|qpm)\b|_tier_requests\b|_requests_per_/i

/**
 * Which limit a rate limit hit, from the provider's code where the code
 * names it: ERNIE's 336501 (RPM) and 336502 (TPM), 18 (QPS) and its
 * `rpm_`/`tpm_rate_limit_exceeded`; Doubao's
 * `ModelAccountRpm…`/`ModelAccountTpm…`, `…EndpointRPMExceeded`/`…TPMExceeded`;
 * DashScope's `Throttling.RateQuota` and `Throttling.BurstRate` ("Request
 * rate increased too quickly": a burst of calls; requests) and
 * `Throttling.AllocationQuota` (tokens). Undefined for any other code.
 */
export function limitedByCode(code: string | undefined): RateLimitedBy | undefined {
  if (code === undefined) return undefined
  if (code === '336502' || code === 'Throttling.AllocationQuota' || TPM_CODE.test(code))
    return 'tokens'
  if (
    code === '336501' ||
    code === '18' ||
    code === 'Throttling.RateQuota' ||
    code === 'Throttling.BurstRate' ||
    RPM_CODE.test(code)
  )
    return 'requests'
  return undefined
}

// A code that spells the limit's abbreviation as a word or CamelCase part.
const TPM_CODE = /(?:^|[^a-z])tpm|Tpm|TPM/
const RPM_CODE = /(?:^|[^a-z])(?:rpm|qpm|qps)|Rpm|RPM|Qpm|QPM|Qps|QPS/

/**
 * `0` as a count (HTTP's optional whitespace around it allowed); sent twice
 * (a proxy's copy), its first member, as the wait is read from the same
 * headers. Anything else, absent included, is not.
 */
function isZero(value: string | undefined): boolean {
  return value !== undefined && firstMember(value) === '0'
}
