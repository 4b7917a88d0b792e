import { textWeight } from '../../budget/textWeight.js'
import type { NormalizedErrorWithUsage } from '../../errors/ProviderError.js'
import type {
  CooldownScope,
  ErrorKind,
  NormalizedError,
  RateLimitedBy,
  Usage,
} from '../../types.js'
import { type BodyVerdict, classifyError, classifyStreamError } from '../classifyError.js'
import { parseGoDurationMs, parseProtoDurationMs } from '../durations.js'
import type { ErrorInput, StreamErrorInput } from '../ErrorInput.js'
import { lookup } from '../openai/errors.js'
import { asArray, get, getCode, getRecord, getString, parseAnswerJson } from '../safeJson.js'
import { geminiUsage, geminiUsageReported } from './response.js'

/** google.rpc status names. */
const GEMINI_STATUSES: Readonly<Record<string, ErrorKind>> = {
  RESOURCE_EXHAUSTED: 'rate_limited',
  UNAVAILABLE: 'overloaded',
  INTERNAL: 'server_error',
  UNKNOWN: 'server_error',
  DEADLINE_EXCEEDED: 'timeout',
  INVALID_ARGUMENT: 'bad_request',
  // The Gemini API's one documented FAILED_PRECONDITION is about the
  // project, not the request: "Gemini API free tier is not available in your
  // country. Please enable billing on your project in Google AI Studio."
  // (ai.google.dev/gemini-api/docs/troubleshooting, error-code table). As
  // `bad_request` it failed the call with no fallback and blamed the client.
  FAILED_PRECONDITION: 'quota_exhausted',
  OUT_OF_RANGE: 'bad_request',
  PERMISSION_DENIED: 'auth',
  UNAUTHENTICATED: 'auth',
  NOT_FOUND: 'not_found',
  ABORTED: 'server_error',
  // HTTP 499 "The operation was cancelled." with reason `backendError`, under
  // heavy load (verbatim in google-gemini/gemini-cli#20309): Google's side
  // gave up, not the request. Unlisted, a 499 was a 4xx — `bad_request`,
  // request-bound: no retry, no fallback, and the client blamed.
  CANCELLED: 'server_error',
}

const RETRY_INFO = 'type.googleapis.com/google.rpc.RetryInfo'
const QUOTA_FAILURE = 'type.googleapis.com/google.rpc.QuotaFailure'
const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo'
const MAX_DETAILS = 32

/**
 * `{"error":{"code":429,"message","status":"RESOURCE_EXHAUSTED","details":[…]}}`.
 * `RetryInfo.retryDelay` ("34.4s") is the wait. A quota whose limit is 0
 * (free tier unavailable for the model or region) never refills, so it is
 * permanent however much the 429 looks like a rate limit: no wait, whatever
 * `RetryInfo` says. A 200 whose prompt
 * was blocked (`promptFeedback.blockReason`, no candidates) is a refusal, not
 * an empty success.
 */
export function readGeminiError(
  json: unknown,
  _text: string,
  httpStatus: number,
): BodyVerdict | undefined {
  // streamGenerateContent without alt=sse answers a JSON array. An error
  // comes as an element of it: the first when nothing was generated, or
  // after the chunks generated so far when the generation broke (as `data:
  // {"error":…}` after text in SSE). Read only as the first, that broken
  // answer was a success cut short (finishReason 'unknown', no retry, no
  // fallback) — while its text never reached the caller.
  const root = Array.isArray(json)
    ? (json.find((element) => getRecord(element, 'error') !== undefined) ?? json[0])
    : json
  const error = getRecord(root, 'error')
  if (error === undefined) return blockedPrompt(root)
  const status = getString(error, 'status')
  const message = getString(error, 'message')
  let kind = lookup(GEMINI_STATUSES, status)
  let retryAfterMs: number | undefined
  let scope: CooldownScope | undefined
  let daily = false
  // A quota at zero: no wait ever lifts it.
  let zero = false
  let limitedBy: RateLimitedBy | undefined
  for (const detail of asArray(get(error, 'details')).slice(0, MAX_DETAILS)) {
    const type = getString(detail, '@type')
    if (type === RETRY_INFO) {
      const delay = getString(detail, 'retryDelay')
      retryAfterMs = delay === undefined ? undefined : parseProtoDurationMs(delay)
    } else if (type === QUOTA_FAILURE) {
      if (hasZeroQuota(detail)) zero = true
      else if (kind === 'rate_limited' && hasDailyQuota(detail)) daily = true
      scope = quotaScope(detail)
      limitedBy = quotaLimitedBy(detail)
    } else if (type === ERROR_INFO && getString(detail, 'reason') === 'API_KEY_INVALID') {
      kind = 'auth'
    }
  }
  const text = message ?? ''
  if (kind === 'rate_limited' && /\blimit:\s*0\b/.test(text)) zero = true
  if (zero) {
    // "limit: 0": the model is not in the key's tier (a free key on a
    // paid-only model). It never refills, so it is a quota gone for good, as
    // OpenAI's `insufficient_quota` is: no wait, so admission retires it in
    // its scope (a quota naming the model: that model on that key, the key's
    // other models free) instead of cooling it. Given RetryInfo's seconds (or
    // the message's), it was cooled and then probed again every time they
    // were over, each probe refused the same way.
    kind = 'quota_exhausted'
    retryAfterMs = undefined
    daily = false
    // Without a QuotaFailure, the message's "limit: 0, model: gemini-2.5-pro"
    // names the model all the same: not the whole key's quota.
    if (scope === undefined && /\blimit:\s*0,\s*model:/.test(text)) scope = 'model'
  }
  // Prepaid billing's empty balance is RESOURCE_EXHAUSTED too, with no
  // details: `429 {"error":{"code":429,"message":"Your prepayment credits are
  // depleted. Please go to AI Studio at https://ai.studio/projects to manage
  // your project and billing.","status":"RESOURCE_EXHAUSTED"}}` (verbatim in
  // discuss.ai.google.dev/t/170539). Every key of the billing account stops
  // until someone pays: read as a rate limit, it was retried and cooled
  // again and again instead of falling back.
  // A 402 (Payment Required) says the same whatever the message.
  if (
    kind === 'rate_limited' &&
    (httpStatus === 402 || /prepayment credits are depleted/i.test(text.slice(0, 500)))
  ) {
    kind = 'quota_exhausted'
  }
  if (kind === 'bad_request' && /input token count.*exceeds the maximum/i.test(text)) {
    kind = 'context_too_long'
  }
  // The HTTP body over Gemini's byte limit: 400 `INVALID_ARGUMENT` "Request
  // payload size exceeds the limit: 20971520 bytes." ("…: 4194304 bytes."
  // in google-gemini/deprecated-generative-ai-android#26, "…: 314572800
  // bytes." in MaKTaiL/gemini-srt-translator#63: the figure changes, not
  // the words), refused before the model reads it — Anthropic's 413
  // `request_too_large`. Not this request's form: as
  // `bad_request` it failed the call with no fallback (a model whose limit
  // takes the body was never asked) and blamed the client.
  if (kind === 'bad_request' && PAYLOAD_TOO_LARGE.test(text.slice(0, 500))) {
    kind = 'request_too_large'
  }
  if (daily && kind === 'rate_limited') {
    // A spent per-day quota is a quota, not a rate limit: retried after
    // RetryInfo's wait (often seconds) it is refused again until the daily
    // reset. Not retried, so the call falls back at once; still in its
    // scope (a `…PerModel` quota: that model on that key, the key's other
    // models free). Its wait is the day the quota counts, whatever
    // RetryInfo says (it "resets at midnight Pacific time":
    // ai.google.dev/gemini-api/docs/rate-limits; `quotaWindow`), so
    // admission cools that scope (one probe per maxRetryAfterMs) instead of
    // retiring the key — and later calls do not send to the spent model
    // again each time RetryInfo's seconds are over.
    kind = 'quota_exhausted'
  }
  const messageWaitMs = retryInMessage(text)
  // RetryInfo's `retryDelay` is the message's wait cut to whole seconds:
  // "Please retry in 58.934310785s." beside `"retryDelay": "58s"`
  // (googleapis/python-genai#2114), "… in 0.717s." beside "0s". Taken as it
  // was, the retry (and the cooldown) ended up to a second before the quota
  // refilled — refused again, and that 429's own "0s" sent the next one at
  // once. The message's figure is the same wait, exact: it wins when it is
  // RetryInfo's to the second; a rate limit's only, as `messageWaitMs` is.
  if (
    kind === 'rate_limited' &&
    retryAfterMs !== undefined &&
    messageWaitMs !== undefined &&
    messageWaitMs > retryAfterMs &&
    messageWaitMs < retryAfterMs + 1000
  ) {
    retryAfterMs = messageWaitMs
  }
  // FAILED_PRECONDITION (400) "User location is not supported for the API
  // use." (google-gemini/gemini-cli#24641; ai.google.dev/gemini-api/docs/available-regions):
  // where this host is, not the project — unlike the free tier's "not
  // available in your country. Please enable billing", which billing lifts.
  // As the project's quota it retired every key in turn.
  // Not "…without a billing account linked" (u14app/neo-chat#7): the
  // project's, which linking billing lifts, as the free tier's above — read
  // as the host's, the unbilled key was never retired and every call went to it.
  const opening = text.slice(0, 500)
  const locationRefused =
    status === 'FAILED_PRECONDITION' && USER_LOCATION.test(opening) && !BILLING.test(opening)
  return {
    ...(locationRefused ? { locationRefused: true } : {}),
    providerCode: status ?? getCode(error, 'code'),
    message,
    kind,
    retryAfterMs,
    // The message's "Please retry in 34.5s." is a rate limit's wait only
    // (`messageWaitMs`): Google writes it into other failures too, and a
    // server error or overload given it waited as if cooled by a limit.
    messageWaitMs,
    scope,
    ...(daily && kind === 'quota_exhausted' ? { quotaWindow: 'day' as const } : {}),
    ...(limitedBy === undefined ? {} : { limitedBy }),
  }
}

const USER_LOCATION = /\buser location is not supported\b/i
const PAYLOAD_TOO_LARGE = /\brequest payload size exceeds the limit\b/i
const BILLING = /\bbilling\b/i

/**
 * Which limit the violated quotas count: `tokens` when each quota id (or,
 * without one, metric) names tokens
 * (`GenerateContentInputTokensPerModelPerMinute-FreeTier`,
 * `…/generate_content_free_tier_input_token_count`), `requests` when each
 * names requests (`GenerateRequestsPerMinutePerProjectPerModel-FreeTier`);
 * undefined for a mix or neither.
 */
function quotaLimitedBy(detail: unknown): RateLimitedBy | undefined {
  const violations = asArray(get(detail, 'violations')).slice(0, MAX_DETAILS)
  if (violations.length === 0) return undefined
  const counts = violations.map((v) => {
    const named = getString(v, 'quotaId') ?? getString(v, 'quotaMetric') ?? ''
    if (/token/i.test(named)) return 'tokens'
    if (/request/i.test(named)) return 'requests'
    return undefined
  })
  const first = counts[0]
  return first !== undefined && counts.every((c) => c === first) ? first : undefined
}

/**
 * What the violated quotas apply to: `model` when each names a model (a
 * `model` dimension, or a `…PerModel…` quota id), else `key` — a
 * per-project limit holds back every model called with the project's key.
 * Undefined when no violation is listed.
 */
function quotaScope(detail: unknown): CooldownScope | undefined {
  const violations = asArray(get(detail, 'violations')).slice(0, MAX_DETAILS)
  if (violations.length === 0) return undefined
  const perModel = (v: unknown) =>
    getString(getRecord(v, 'quotaDimensions'), 'model') !== undefined ||
    /PerModel/i.test(getString(v, 'quotaId') ?? '')
  return violations.every(perModel) ? 'model' : 'key'
}

/**
 * Whether a violated quota counts per day: its `quotaId` names the window
 * (`GenerateRequestsPerDayPerProjectPerModel-FreeTier`, beside
 * `…PerMinute…`; google.rpc.QuotaFailure.Violation, googleapis
 * google/rpc/error_details.proto).
 */
function hasDailyQuota(detail: unknown): boolean {
  return asArray(get(detail, 'violations'))
    .slice(0, MAX_DETAILS)
    .some((v) => /PerDay/i.test(getString(v, 'quotaId') ?? ''))
}

function hasZeroQuota(detail: unknown): boolean {
  return asArray(get(detail, 'violations'))
    .slice(0, MAX_DETAILS)
    .some((v) => {
      const value = get(v, 'quotaValue')
      return value === '0' || value === 0
    })
}

/**
 * Gemini also writes the wait into the message, as Google's backends print
 * a duration (Go's and absl's format): "Please retry in 34.427s.", "…
 * in 717.654253ms.", and for a spent daily allowance "… in
 * 2h47m56.584147483s." — read as seconds only, the last two were no wait.
 */
function retryInMessage(text: string): number | undefined {
  const match = RETRY_IN.exec(text.slice(0, 2000))
  // The sentence's full stop is no part of the duration: "34.427s." → "34.427s".
  return match === null ? undefined : parseGoDurationMs((match[1] ?? '').replace(/\.+$/, ''))
}

// The duration's characters only (digits, dot, unit letters): linear on any text.
const RETRY_IN = /\bretry in ([0-9.µa-z]{1,40})/i

function blockedPrompt(root: unknown): BodyVerdict | undefined {
  const reason = getString(getRecord(root, 'promptFeedback'), 'blockReason')
  if (reason === undefined || asArray(get(root, 'candidates')).length > 0) return undefined
  return {
    providerCode: `blockReason:${reason}`,
    message: `prompt blocked: ${reason}`,
    kind: 'content_policy',
  }
}

/**
 * An error in a 2xx JSON-array answer carries what its chunks before it were
 * billed (`billedBeforeError`): the usage they reported, so the failed
 * attempt is charged by it (`ProviderError.usage`); else, when chunks came
 * without counts, the characters of output they carried
 * (`ProviderError.outputCharsBeforeError`), charged as a stream cut before
 * its usage is — not as a refusal that cost nothing.
 */
export function normalizeGeminiError(input: ErrorInput): NormalizedErrorWithUsage | undefined {
  const error = classifyError(input, readGeminiError)
  if (error === undefined || !(error.status >= 200 && error.status < 300)) return error
  const billed = billedBeforeError(input)
  return billed === undefined ? error : { ...error, ...billed }
}

/**
 * What the chunks before the `{"error": …}` element of a JSON-array answer
 * say was generated: the last `usageMetadata` (Gemini's counts are running
 * totals, each chunk's the whole answer's so far) when one had an input
 * count; else, when any chunk with candidates came, the `textWeight` of its
 * text, thinking, function names and arguments (as a stream weighs what it
 * delivered); else undefined (the error
 * came first: nothing was generated).
 */
function billedBeforeError(
  input: ErrorInput,
): { usage: Usage } | { outputCharsBeforeError: number } | undefined {
  let json = input.json
  if (json === undefined) {
    // Parsed again only for an array: the error path, never an answer's.
    if (typeof input.body !== 'string' || !/^\s*\[/.test(input.body.slice(0, 64))) return undefined
    json = parseAnswerJson(input.body)
  }
  if (!Array.isArray(json)) return undefined
  let metadata: unknown
  let generated = false
  let chars = 0
  for (const element of json) {
    if (getRecord(element, 'error') !== undefined) break
    const said = get(element, 'usageMetadata')
    if (geminiUsageReported(said)) metadata = said
    const candidates = get(element, 'candidates')
    if (!Array.isArray(candidates)) continue
    generated = true
    for (const candidate of candidates) {
      for (const part of asArray(get(getRecord(candidate, 'content'), 'parts')))
        chars += partChars(part)
    }
  }
  if (metadata !== undefined) {
    const usage = geminiUsage(metadata)
    if (usage.inputTokens > 0) return { usage }
  }
  return generated ? { outputCharsBeforeError: chars } : undefined
}

/** A part's output `textWeight`, as a stream weighs what it delivered: text or thinking, a call's name and arguments. */
function partChars(part: unknown): number {
  const text = getString(part, 'text')
  const call = getRecord(part, 'functionCall')
  const args = call === undefined ? undefined : getRecord(call, 'args')
  return (
    textWeight(text ?? '') +
    (call === undefined ? 0 : textWeight(getString(call, 'name') ?? '')) +
    (args === undefined ? 0 : argsChars(args))
  )
}

/**
 * A call's arguments as JSON, weighed (`textWeight`). `JSON.parse` takes nesting that
 * `JSON.stringify` overflows the stack on (100 000 levels): such arguments
 * count for nothing rather than make the error's reading throw (a 200
 * recorded as a network failure).
 */
function argsChars(args: Record<string, unknown>): number {
  try {
    return textWeight(JSON.stringify(args))
  } catch {
    return 0
  }
}

export function normalizeGeminiStreamError(frame: StreamErrorInput): NormalizedError | undefined {
  return classifyStreamError(frame, readGeminiError)
}
