import type { ErrorKind, NormalizedError, OverLimit } from '../../types.js'
import { type BodyVerdict, classifyError, classifyStreamError } from '../classifyError.js'
import { parseGoDurationMs, parseSecondsMs } from '../durations.js'
import type { ErrorInput, StreamErrorInput } from '../ErrorInput.js'
import { getCode, getRecord, getString } from '../safeJson.js'

/** OpenAI's `error.code` / `error.type` values that say more than the status. */
const OPENAI_CODES: Readonly<Record<string, ErrorKind>> = {
  insufficient_quota: 'quota_exhausted',
  billing_hard_limit_reached: 'quota_exhausted',
  // The account's state, on a 429 like a rate limit's (older answers with
  // `code: null`, `type` alone): "Your account is not active, please check
  // your billing details on our website." (BerriAI/litellm#2743) and "Your
  // access was terminated due to violation of our policies"
  // (ztjhz/BetterChatGPT#105). No wait lifts either: as the status's rate
  // limit each was retried on the same key and cooled, again and again,
  // and the provider's next key was not tried at once.
  billing_not_active: 'quota_exhausted',
  access_terminated: 'auth',
  rate_limit_exceeded: 'rate_limited',
  context_length_exceeded: 'context_too_long',
  // One field's string over its own limit ("Invalid 'tools[0].function.description':
  // string too long. Expected a string with maximum length 1024"; a message's
  // content over 10485760 characters): no context window is involved, and
  // `param` names the field to fix.
  string_above_max_length: 'bad_request',
  content_policy_violation: 'content_policy',
  content_filter: 'content_policy',
  invalid_api_key: 'auth',
  account_deactivated: 'auth',
  model_not_found: 'not_found',
  server_error: 'server_error',
}

/**
 * Reads `{"error":{"message","type","param","code"}}` — OpenAI's shape, which
 * DeepSeek, Qwen's compatible mode, Qianfan v2 and Ark copy. Also accepted at
 * HTTP 200: some compatible servers send the error object with a 200.
 */
export function readOpenAIError(
  json: unknown,
  codes: Readonly<Record<string, ErrorKind>> = OPENAI_CODES,
): BodyVerdict | undefined {
  const error = getRecord(json, 'error')
  if (error === undefined) return undefined
  const code = getCode(error, 'code')
  const type = getString(error, 'type')
  const message = getString(error, 'message')
  const tooLarge = isRequestTooLarge(message)
  const requestFault = REQUEST_FAULT_TYPES.has(type ?? '') || code === '400'
  const kind = tooLarge
    ? 'request_too_large'
    : (lookup(codes, code) ??
      lookup(codes, type) ??
      // Only on a body that blames the request: a proxy's 503 or 429 quoting
      // the phrase stays what its status says.
      (requestFault ? contextInWords(message) : undefined))
  const overLimit = tooLarge ? overLimitOf(message) : undefined
  const param = getString(error, 'param')
  // OpenAI's 429 `type` names the limit hit: `tokens` (TPM, TPD) or `requests` (RPM, RPD).
  const limitedBy = type === 'tokens' ? 'tokens' : type === 'requests' ? 'requests' : undefined
  const messageWaitMs = tryAgainInMs(message)
  return {
    ...(requestFault ? { requestFault: true } : {}),
    // 403 `"type":"request_forbidden"`, "Country, region, or territory not
    // supported" (platform.openai.com/docs/guides/error-codes): this host's
    // location, whatever key it sends (songquanpeng/one-api#1692).
    ...(code === 'unsupported_country_region_territory' ? { locationRefused: true } : {}),
    providerCode: code ?? type,
    message,
    kind,
    ...(messageWaitMs === undefined ? {} : { messageWaitMs }),
    ...(messageWaitMs !== undefined && PER_DAY.test(message?.slice(0, 500) ?? '')
      ? { messageWaitPerDay: true }
      : {}),
    ...(param === undefined || param === '' ? {} : { param }),
    ...(overLimit === undefined ? {} : { overLimit }),
    ...(limitedBy === undefined ? {} : { limitedBy }),
  }
}

/**
 * An over-long prompt said in OpenAI's words under no code of its own:
 * DeepSeek's 400 (`"code":"invalid_request_error"`: "This model's maximum
 * context length is 131072 tokens. However, you requested 139867 tokens …",
 * FoundationAgents/OpenManus#79, BerriAI/litellm#10431) and vLLM's
 * (`BadRequestError`, `code: 400`). Read as `bad_request`, the call failed
 * with no recovery step run, where a smaller request is what the provider
 * asks for. Only where no code named a kind.
 */
function contextInWords(message: string | undefined): ErrorKind | undefined {
  return CONTEXT_WORDS.test(message?.slice(0, 500) ?? '') ? 'context_too_long' : undefined
}

const CONTEXT_WORDS = /\bmaximum context length is\b/i

/**
 * `type`s that blame the request without naming what is wrong: OpenAI's
 * (which DeepSeek, Qwen's compatible mode, LiteLLM copy) and the exception
 * class vLLM and SGLang put there (`BadRequestError`, with `code: 400`).
 * Only an error inside a 2xx answer reads them (`BodyVerdict.requestFault`):
 * on an error status, the status says it.
 */
const REQUEST_FAULT_TYPES: ReadonlySet<string> = new Set([
  'invalid_request_error',
  'BadRequestError',
])

/**
 * "… on requests per day (RPD): …", "… on tokens per day (TPD): …": the
 * limit that refused is a daily one, which no `x-ratelimit-*` header counts.
 */
const PER_DAY = /\bper day \([a-z]{2,4}\)/i

/**
 * The wait OpenAI (and Groq, in the same words) writes into a 429's message:
 * "… on requests per day (RPD): Limit 200, Used 200, Requested 1. Please
 * try again in 7m12s.", "… Please try again in 800ms." — a Go duration.
 * The `x-ratelimit-*` headers count the per-minute limits only: on a daily
 * limit, or a token limit whose remaining count is not 0 but too small for
 * this request, no header names a wait, and without this one a spent daily
 * limit was retried after a second's backoff, again and again. Used only
 * for a rate limit, when no header gives a wait (`BodyVerdict.messageWaitMs`).
 */
function tryAgainInMs(message: string | undefined): number | undefined {
  const text = message?.slice(0, 500) ?? ''
  const found = TRY_AGAIN_IN.exec(text)
  // The sentence's full stop is no part of the duration: "7m12s." → "7m12s".
  const go = found === null ? undefined : parseGoDurationMs((found[1] ?? '').replace(/\.+$/, ''))
  if (go !== undefined) return go
  // Azure OpenAI passes OpenAI's body shape on with its own words: "…
  // exceeded token rate limit of your current OpenAI S0 pricing tier.
  // Please retry after 56 seconds." (microsoft/sample-app-aoai-chatGPT#406),
  // and its API gateway's "Rate limit is exceeded. Try again in 30
  // seconds." — seconds spelt out, which no Go duration reads.
  const seconds = IN_SECONDS.exec(text)
  return seconds === null ? undefined : parseSecondsMs(seconds[1] ?? '')
}

// The duration's characters only (digits, dot, unit letters): linear on any text.
const TRY_AGAIN_IN = /\btry again in ([0-9.µa-z]{1,32})/i
const IN_SECONDS = /\b(?:retry after|try again in) (\d{1,9}(?:\.\d{1,6})?) seconds?\b/i

/**
 * OpenAI refuses a single request bigger than the organisation's whole
 * per-minute token limit with a 429 that looks like every rate limit —
 * `"code":"rate_limit_exceeded"`, `"type":"tokens"` — but says "Request too
 * large for gpt-4o in organization org-… on tokens per min (TPM): Limit
 * 30000, Requested 50000. The input or output tokens must be reduced in
 * order to run successfully." (Groq sends the same words and code on a 413;
 * Azure OpenAI passes OpenAI's on.) No wait lifts it: read as a rate limit,
 * each such request cooled the model on the key for everybody (with growing
 * back-off) and its client was told to retry. Nor is it the context window:
 * the model could take it, and a model or provider with a larger limit (a
 * higher tier) serves it — so `request_too_large`, which falls back, not
 * `context_too_long`, which does not. A real rate limit says "Rate limit
 * reached for …", so the message decides.
 */
function isRequestTooLarge(message: string | undefined): boolean {
  const start = message?.slice(0, 64).trimStart().toLowerCase()
  return start?.startsWith('request too large for ') === true
}

/**
 * "… on tokens per min (TPM): Limit 30000, Requested 50000" (Groq: "per
 * minute"; OpenAI now writes "Limit 30,000, Requested 36,278") →
 * `{ limit: 'TPM', limitTokens: 30000, requestedTokens: 50000 }`.
 * Read from the message's first 500 characters (all `cleanMessage` keeps);
 * undefined when they do not say it so.
 */
function overLimitOf(message: string | undefined): OverLimit | undefined {
  const found = OVER_LIMIT.exec(message?.slice(0, 500) ?? '')
  if (found === null) return undefined
  const [, limit = '', max = '', requested = ''] = found
  const limitTokens = Number(max.replaceAll(',', ''))
  const requestedTokens = Number(requested.replaceAll(',', ''))
  if (!Number.isSafeInteger(limitTokens) || !Number.isSafeInteger(requestedTokens)) return undefined
  return { limit: limit.toUpperCase(), limitTokens, requestedTokens }
}

// A figure is plain digits or grouped by thousands ("30,000"; a comma
// anywhere else, "30,00", is no figure). No nested or overlapping
// quantifiers (each group starts at a comma): linear on any text.
const OVER_LIMIT =
  /on tokens per [a-z]{1,8} \(([a-z]{2,4})\): limit (\d{1,3}(?:,\d{3}){1,4}|\d{1,15}), requested (\d{1,3}(?:,\d{3}){1,4}|\d{1,15})/i

export function lookup(
  table: Readonly<Record<string, ErrorKind>>,
  key: string | undefined,
): ErrorKind | undefined {
  return key !== undefined && Object.hasOwn(table, key) ? table[key] : undefined
}

/**
 * DeepSeek: OpenAI's shape with its own statuses — 402 "Insufficient Balance"
 * (permanent until someone pays), 422 invalid parameters, 429, 500, 503
 * "Server overloaded". Its 402 body says `"code":"invalid_request_error"`, so
 * the status and message decide, not the code — its over-long prompt's 400
 * too ("maximum context length", read by `readOpenAIError`).
 */
export function normalizeDeepSeekError(input: ErrorInput): NormalizedError | undefined {
  return classifyError(input, readDeepSeekError)
}

export function normalizeDeepSeekStreamError(frame: StreamErrorInput): NormalizedError | undefined {
  return classifyStreamError(frame, readDeepSeekError)
}

function readDeepSeekError(json: unknown): BodyVerdict | undefined {
  const verdict = readOpenAIError(json)
  if (verdict === undefined) return undefined
  const message = verdict.message?.toLowerCase() ?? ''
  if (message.includes('insufficient balance')) return { ...verdict, kind: 'quota_exhausted' }
  if (message.includes('server overloaded')) return { ...verdict, kind: 'overloaded' }
  // DeepSeek's codes are generic (`invalid_request_error`): the status speaks.
  return verdict
}
