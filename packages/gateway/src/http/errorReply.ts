import {
  DEADLINE_EXPIRED_HEADER,
  fieldOf,
  isClientClosed,
  isDeadlineExceeded,
} from '@hourglass/core'
import { reportExpired } from '@hourglass/express'
import {
  DEFAULT_MAX_RETRY_AFTER_MS,
  type ErrorKind,
  escapeUnprintable,
  isBudgetExceeded,
  isInvalidChatRequest,
  isKeysRetired,
  isModelUnavailable,
  isProviderError,
  isRateLimited,
  isRequestRejected,
  isStreamInterrupted,
  type KeysRetiredError,
  looksLikeWebPage,
  MAX_PROVIDER_TEXT_CHARS,
  type ProviderError,
  providerText,
  type RateLimitedBy,
  REQUEST_BOUND_KINDS,
} from '../llm.js'
import { toOpenAIError } from '../openai/encode.js'
import { isGatewayRequestError } from './GatewayRequestError.js'
import { isGatewayShutdown } from './GatewayShutdownError.js'
import type { CapField } from './untranslatableRefusal.js'

/** An error as the client sees it: OpenAI's error body, a status, and headers. */
export interface ErrorReply {
  status: number
  headers: Record<string, string>
  body: {
    error: {
      message: string
      type: string
      param: string | null
      code: string
      /**
       * The provider's own code (`error.code` or its type: `invalid_value`,
       * `context_length_exceeded`, Anthropic's `invalid_request_error`,
       * Gemini's `INVALID_ARGUMENT`) when it refused the request itself (a
       * 400 the client can act on); `code` keeps the gateway's vocabulary,
       * whatever provider answered.
       */
      provider_code?: string
    }
  }
}

/**
 * Kinds whose provider message tells the client what to fix in its request:
 * the request-bound kinds of llm's one error-kind table.
 */
const CLIENT_FIXABLE = REQUEST_BOUND_KINDS

const NO_RETRY = { 'x-should-retry': 'false' }

const DEADLINE_EXCEEDED_CODE = 'deadline_exceeded'

/**
 * Any failure → OpenAI's error shape with the status a client can act on:
 * 400 bad request, 404 unknown model, 429 + `Retry-After` when every key or
 * limit is spent, 504 + `x-deadline-expired: 1` when time ran out (which
 * `sendError` takes off for a budget of the gateway's own cap), 502/503
 * when providers are down. Messages name providers and models (config
 * names), never upstream hosts, keys or stack traces; a provider's own text
 * is passed on only when it tells the client what to fix in its request.
 * `x-should-retry` tells the official SDKs whether retrying can help.
 * `capField`: the output cap field the client sent, named when a smaller
 * cap would help (`max_tokens` when it sent none).
 */
export function errorReply(error: unknown, keyWait?: KeyWait, capField?: CapField): ErrorReply {
  if (causedBy(error, isGatewayShutdown)) return shutdownReply()
  // The client left: nobody reads this answer (sendError writes nothing), but the log and the metrics say what happened.
  if (causedBy(error, isClientClosed)) return clientClosedReply()
  if (isDeadlineExceeded(error)) return deadlineReply()
  if (isGatewayRequestError(error)) {
    return reply(
      error.status,
      error.message,
      error.type,
      error.errorCode,
      error.param,
      error.retryable ? {} : NO_RETRY,
    )
  }
  if (isInvalidChatRequest(error)) {
    return reply(
      400,
      error.message,
      'invalid_request_error',
      'invalid_request',
      error.field,
      NO_RETRY,
    )
  }
  if (isRateLimited(error)) {
    if (error.kind === 'request_too_large') return tooLargeReply([error], capField)
    return error.kind === 'overloaded'
      ? overloadReply(error.provider, error.retryAfterMs)
      : rateLimitReply(
          error.provider,
          error.retryAfterMs,
          error.reason,
          error.limitedBy === 'tokens',
        )
  }
  if (isKeysRetired(error)) {
    const shaped = toOpenAIError({ kind: error.reason, retryable: false, status: 0, message: '' })
    return reply(
      shaped.status,
      `${error.provider}: ${retiredWhy(error)}`,
      shaped.body.error.type,
      shaped.body.error.code,
      null,
      NO_RETRY,
    )
  }
  if (isBudgetExceeded(error)) {
    // llm skips a model the budget cannot afford for the next: this is the
    // last one refused, and models before it may have been sent and failed.
    const sent = error.causes.reduce((n, c) => n + c.attempts, 0)
    return reply(
      402,
      sent === 0
        ? 'the request would exceed its cost budget; nothing was sent'
        : `the request would exceed its cost budget on every model left; ${sent} attempt${sent === 1 ? ' was' : 's were'} sent before and failed`,
      'invalid_request_error',
      'budget_exceeded',
      null,
      NO_RETRY,
    )
  }
  if (isRequestRejected(error) || isProviderError(error)) {
    const cause = isRequestRejected(error) ? error.cause : error
    if (isProviderError(cause)) return providerReply(cause)
  }
  if (isStreamInterrupted(error)) {
    if (isDeadlineExceeded(error.cause)) return deadlineReply()
    const cause = isProviderError(error.cause) ? providerReply(error.cause) : undefined
    // Why it broke, as the same failure before the first token says it
    // (`overloaded (overloaded_error)`, `rate limited`, `network`): the
    // event's message is what the official SDKs throw with, and without it
    // an overload, a rate limit and a cut connection all read alike.
    const why = isProviderError(error.cause) ? `: ${providerWhy(error.cause)}` : ''
    const shaped = reply(
      cause?.status ?? 502,
      `the stream from ${error.provider}/${error.model} broke after the first token${why}; not restarted`,
      'server_error',
      'stream_interrupted',
      null,
      NO_RETRY,
    )
    const providerCode = cause?.body.error.provider_code
    if (providerCode !== undefined) shaped.body.error.provider_code = providerCode
    return shaped
  }
  if (isModelUnavailable(error)) {
    return unavailableReply(
      error.causes.map((c) => c.cause),
      keyWait,
      capField,
    )
  }
  return internalErrorReply()
}

/**
 * A bug's reply, wherever the gateway writes one (here, and `startGateway`'s
 * answer to what its router left). A bug meets the same request again, and
 * one after the provider answered lost an answer already paid for:
 * openai-node retried every 500 (twice by default), each retry sent again
 * and billed again.
 */
export function internalErrorReply(): ErrorReply {
  return reply(500, 'internal gateway error', 'server_error', 'internal_error', null, NO_RETRY)
}

/**
 * How long until a key of `provider` (for `model`) may be used again, in ms
 * (`waitMs`: 0 at once, Infinity when every key is retired), and which
 * limit holds it back when admission knows (`limitedBy`, the limit the
 * provider's 429 named), as admission sees it now, and how many keys the
 * provider has (`keys`); undefined when not known (the gateway's
 * `Admission.forecast`).
 */
export type KeyWait = (
  provider: string,
  model: string,
) =>
  | { waitMs: number; limitedBy?: RateLimitedBy | undefined; keys?: number | undefined }
  | undefined

/** What a client that hung up is logged and counted as (nginx's 499); never written. */
export function clientClosedReply(): ErrorReply {
  return reply(
    499,
    'the client closed the connection before the answer',
    'invalid_request_error',
    'client_closed',
  )
}

function shutdownReply(): ErrorReply {
  return reply(
    503,
    'the gateway is shutting down and did not finish this request in time; retry (another instance can serve it)',
    'server_error',
    'shutting_down',
    null,
    { 'x-should-retry': 'true', 'retry-after': '1' },
  )
}

export function deadlineReply(): ErrorReply {
  return reply(
    504,
    'the request ran out of time (deadline exceeded)',
    'server_error',
    DEADLINE_EXCEEDED_CODE,
    null,
    {
      [DEADLINE_EXPIRED_HEADER]: '1',
      ...NO_RETRY,
    },
  )
}

/**
 * The gateway answered the request's deadline itself with `reply` (its 504,
 * or a stream's error event or cut: the handler's deadline ends
 * `replyReserveMs` before the ingress middleware's): tell @hourglass/express,
 * whose end event — the request's span, the exceeded count — would
 * otherwise say `ok`. A no-op for any other reply, without `deadline()` in
 * the chain, or when the middleware's backstop answered first.
 */
export function reportDeadlineReply(req: object, reply: ErrorReply): void {
  if (reply.body.error.code === DEADLINE_EXCEEDED_CODE) reportExpired(req)
}

function providerReply(error: ProviderError): ErrorReply {
  const shaped = toOpenAIError(error.normalized)
  const message = CLIENT_FIXABLE.has(error.kind)
    ? `${error.provider}: ${providerWhy(error)}`
    : `${error.provider}/${error.model}: ${providerWhy(error)}`
  const headers: Record<string, string> = {}
  if (error.kind === 'rate_limited' && error.retryAfterMs !== undefined) {
    Object.assign(headers, retryHeaders(error.retryAfterMs))
  }
  // The same request gets the same refusal, whatever the provider's `x-should-retry`.
  if (!error.retryable || error.kind === 'request_too_large') Object.assign(headers, NO_RETRY)
  const shapedReply = reply(
    shaped.status,
    message,
    shaped.body.error.type,
    shaped.body.error.code,
    // The field the provider named, for a refusal the client can fix (its message is passed on too).
    CLIENT_FIXABLE.has(error.kind) ? codeText(error.normalized.param) : null,
    headers,
  )
  // A refusal's own code says what to fix more precisely than the kind the
  // gateway's `code` names (`invalid_value` is one of many `invalid_request`s).
  // Beside it, not in its place: a client matching the gateway's codes keeps working.
  const providerCode = CLIENT_FIXABLE.has(error.kind) ? codeText(error.providerCode) : null
  if (providerCode !== null) shapedReply.body.error.provider_code = providerCode
  return shapedReply
}

/**
 * What went wrong at the provider, as a client is shown it: the provider's
 * own text for a refusal the client can fix, else the kind (and the
 * provider's code), never upstream text that may name hosts.
 */
function providerWhy(error: ProviderError): string {
  if (CLIENT_FIXABLE.has(error.kind)) {
    return looksLikeWebPage(error.normalized.message)
      ? markupPageText(error)
      : providerText(error.normalized.message, MAX_PROVIDER_TEXT_CHARS)
  }
  if (error.kind === 'request_too_large') return tooLargeWhy(error)
  const code = error.providerCode === undefined ? '' : ` (${error.providerCode})`
  return `${kindName(error.kind)}${code}`
}

/** A provider's `param` or code as the client is shown it; null when it names nothing. */
function codeText(code: string | undefined): string | null {
  if (code === undefined) return null
  const text = providerText(code, MAX_CODE_CHARS, '')
  return text === '' ? null : text
}

/**
 * Every model of the fallback list failed. All of them refusing the request
 * as bigger than their whole limit → 413; all limited → 429 with the
 * soonest retry; all overloaded or limited → 503; otherwise 502, listing
 * what each provider did (kind only: no upstream text, but for a
 * too-large refusal without figures, `tooLargeWhy`).
 */
function unavailableReply(
  causes: unknown[],
  keyWait: KeyWait | undefined,
  capField: CapField | undefined,
): ErrorReply {
  if (causes.some((c) => isDeadlineExceeded(c))) return deadlineReply()
  if (causes.length > 0 && causes.every(isTooLarge)) return tooLargeReply(causes, capField)
  const waits: number[] = []
  let limited = 0
  // Of those, the limits known to count tokens (OpenAI's 429 `type: tokens`).
  let limitedByTokens = 0
  let overloaded = 0
  // Refused by admission, nothing sent: each names its wait.
  let refused = 0
  // Limited or overloaded providers whose wait is known (said, or their cooldown's).
  let named = 0
  const parts: string[] = []
  // Failures that took one key out of a provider that has another ready.
  const keysLeft = new Set<unknown>()
  for (const cause of causes) {
    if (isRateLimited(cause)) {
      refused++
      waits.push(cause.retryAfterMs)
      // An overload's cooldown is the provider's overload, not a rate limit.
      if (cause.kind === 'overloaded') overloaded++
      else {
        limited++
        if (cause.limitedBy === 'tokens') limitedByTokens++
      }
      // A refusal no wait helps says which limit the request alone exceeds.
      parts.push(
        `${cause.provider}: ${Number.isFinite(cause.retryAfterMs) ? kindName(cause.kind) : cause.reason}`,
      )
    } else if (isProviderError(cause)) {
      const limit = cause.retryAfterMs
      const keyBack = keyLeft(cause, keyWait)
      if (keyBack !== undefined && keyBack.waitMs > 0) {
        // The last attempt met a key that is gone (401, quota), but the
        // provider has a key that is only cooling (the 429 an earlier
        // attempt met): it answers again once that key is back. A 502
        // `upstream_auth_failed` with `x-should-retry: false` said every
        // key was rejected, though the next request was served.
        limited++
        // Which limit holds that key, as for any 429: a token limit is
        // one a smaller request gets under, a request limit is not.
        if (keyBack.limitedBy === 'tokens') limitedByTokens++
        waits.push(keyBack.waitMs)
        named++
        const on = keyBack.limitedBy === undefined ? '' : ` on ${keyBack.limitedBy}`
        parts.push(
          `${cause.provider}/${cause.model}: ${kindName(cause.kind)}, another key rate limited${on}`,
        )
        continue
      }
      if (keyBack !== undefined) {
        // Another key is free now (the attempts ran out first): the kind
        // stands, but a retry is served, so `x-should-retry` is not false.
        keysLeft.add(cause)
        parts.push(`${cause.provider}/${cause.model}: ${kindName(cause.kind)}, another key left`)
        continue
      }
      if (cause.kind === 'rate_limited' || cause.kind === 'overloaded') {
        if (cause.kind === 'rate_limited') {
          limited++
          if (cause.normalized.limitedBy === 'tokens') limitedByTokens++
        } else overloaded++
        // A provider that named no wait (Qwen's, Doubao's 429s, Anthropic's
        // 529): the cooldown its refusal just set says when this model is
        // tried again. Unsaid, the SDK retried on its own short back-off
        // into that cooldown, spending its retries there.
        const wait = limit ?? cooldownLeft(cause, keyWait)
        if (wait !== undefined) {
          waits.push(wait)
          named++
        }
      }
      parts.push(
        `${cause.provider}/${cause.model}: ${cause.kind === 'request_too_large' ? tooLargeWhy(cause) : kindName(cause.kind)}`,
      )
    } else if (isKeysRetired(cause)) {
      parts.push(`${cause.provider}: ${retiredWhy(cause)}`)
    } else {
      parts.push('failed')
    }
  }
  const summary = `no provider could answer (${parts.join('; ')})`
  if (causes.length > 0 && limited === causes.length) {
    const finite = waits.filter((w) => Number.isFinite(w))
    // `tokens` only when every limit met counts tokens: a smaller request helps then.
    const type = limitedByTokens === causes.length ? 'tokens' : 'requests'
    return reply(429, summary, type, 'rate_limit_exceeded', null, {
      ...(finite.length > 0 ? retryHeaders(Math.min(...finite)) : {}),
    })
  }
  if (causes.length > 0 && limited + overloaded === causes.length) {
    // Every provider refused by admission (its cooldown): when to come back
    // is known, as for the 429 above.
    const finite = waits.filter((w) => Number.isFinite(w))
    const headers =
      refused + named === causes.length && finite.length > 0
        ? retryHeaders(Math.min(...finite))
        : {}
    return reply(503, summary, 'server_error', 'overloaded', null, headers)
  }
  // One kind of failure everywhere (every key rejected, every provider down…):
  // say which. Keys retired by an earlier call (admission then sends nothing)
  // count as the failure that retired them, so the requests after the first
  // 401 or spent quota get the answer the first one got.
  const kinds = causes.map(failureKind)
  const first = kinds[0]
  if (first !== undefined && kinds.every((k) => k === first)) {
    const shaped = toOpenAIError({ kind: first, retryable: false, status: 0, message: '' })
    const headers = causes.every(
      (c) => isKeysRetired(c) || (isProviderError(c) && !c.retryable && !keysLeft.has(c)),
    )
      ? NO_RETRY
      : {}
    return reply(
      shaped.status,
      summary,
      shaped.body.error.type,
      shaped.body.error.code,
      null,
      headers,
    )
  }
  return reply(502, summary, 'server_error', 'upstream_error')
}

/**
 * The request is bigger than this model's whole limit: the provider said so,
 * or the gateway's own TPM accounting refused it for good (both
 * `request_too_large`). Not a request above this process's share while Redis
 * is down: that share grows back, and it stays a 429.
 */
function isTooLarge(cause: unknown): boolean {
  return (isProviderError(cause) || isRateLimited(cause)) && cause.kind === 'request_too_large'
}

/**
 * 413, not 429: no wait lets this request through, so the client must not be
 * told to come back with it (`x-should-retry: false`); a smaller one, or a
 * tier with a larger limit, is served. Each provider's figures, not its text
 * (OpenAI's names the account's organisation); its text, trimmed, only when
 * it gave none (`tooLargeWhy`). The cap to lower is named as the client sent
 * it (`capField`): `max_completion_tokens` from the official clients was
 * told to lower `max_tokens`, a field it never sent; none sent, the
 * gateway's `policy.defaultMaxTokens` went as `max_tokens`.
 */
function tooLargeReply(causes: unknown[], capField: CapField | undefined): ErrorReply {
  // max_tokens counts against a token limit (admission's TPM, a provider's
  // figures), never against a body's bytes (Anthropic's 32 MB, a proxy's 413).
  const tokens = causes.some(
    (c) => isRateLimited(c) || (isProviderError(c) && c.normalized.overLimit !== undefined),
  )
  const parts = causes.map((cause) =>
    isProviderError(cause)
      ? `${cause.provider}/${cause.model}: ${tooLargeWhy(cause)}`
      : isRateLimited(cause)
        ? `${cause.provider}: ${cause.reason}`
        : 'failed',
  )
  return reply(
    413,
    `the request is too large for every provider's limits; reduce the input${tokens ? ` or ${capField ?? 'max_tokens'}` : ''} (${parts.join('; ')})`,
    'invalid_request_error',
    'request_too_large',
    null,
    NO_RETRY,
  )
}

/**
 * "the request alone (50000 tokens) exceeds the provider's TPM limit (30000
 * tokens)" when the provider gave figures; otherwise what it said (a body
 * over Anthropic's 32 MB, a proxy's bare 413: a limit in bytes, which the
 * client can only act on knowing which one).
 */
function tooLargeWhy(error: ProviderError): string {
  const over = error.normalized.overLimit
  return over === undefined
    ? `the provider refused it as too large: ${
        looksLikeWebPage(error.normalized.message)
          ? `${markupPageText(error)} (most likely a proxy's limit on the body's bytes)`
          : providerText(error.normalized.message, MAX_TOO_LARGE_CHARS)
      }`
    : `the request alone (${over.requestedTokens} tokens) exceeds the provider's ${over.limit} limit (${over.limitTokens} tokens)`
}

/** A too-large refusal's reason: one of several in the reply. */
const MAX_TOO_LARGE_CHARS = 300

/** A refusal's `param` and code: as long as llm keeps them. */
const MAX_CODE_CHARS = 200

/** Said instead of quoting a markup page (`looksLikeWebPage`). */
function markupPageText(error: ProviderError): string {
  return `an HTML page with status ${error.status}, not the provider's own error`
}

/**
 * For a failure that took one key out (`auth`: retired; `quota_exhausted`:
 * spent), the wait until another key of the provider may be used and the
 * limit that holds it, when one is left (a finite wait); undefined otherwise.
 * A provider with one key has no other: the wait admission sees is then
 * that key's own — a quota llm cools in its scope instead of retiring the
 * key (Gemini's `limit: 0`, a spent daily quota), which the client was told
 * was "another key rate limited", with a `Retry-After` to wait it out.
 */
function keyLeft(
  cause: ProviderError,
  keyWait: KeyWait | undefined,
): { waitMs: number; limitedBy: RateLimitedBy | undefined } | undefined {
  if (keyWait === undefined) return undefined
  if (cause.kind !== 'auth' && cause.kind !== 'quota_exhausted') return undefined
  const wait = keyWait(cause.provider, cause.model)
  if (wait === undefined || !Number.isFinite(wait.waitMs)) return undefined
  if (wait.keys !== undefined && wait.keys < 2) return undefined
  return { waitMs: Math.max(0, wait.waitMs), limitedBy: wait.limitedBy }
}

/** The wait left on `cause`'s model by admission's cooldowns, in ms; undefined when none is known. */
function cooldownLeft(cause: ProviderError, keyWait: KeyWait | undefined): number | undefined {
  const wait = keyWait?.(cause.provider, cause.model)?.waitMs
  return wait !== undefined && Number.isFinite(wait) && wait > 0 ? wait : undefined
}

/** What a failed model's cause says went wrong, as an error kind (undefined: not a provider's failure). */
function failureKind(cause: unknown): ErrorKind | undefined {
  if (isProviderError(cause)) return cause.kind
  if (isKeysRetired(cause)) return cause.reason
  return undefined
}

function retiredWhy(error: KeysRetiredError): string {
  // Retired for one model only (Qwen's AccessDenied, Gemini's quota of 0):
  // the keys still serve the account's other models, and "every key
  // rejected" sent operators looking for a revoked key.
  if (error.model !== undefined) {
    return error.reason === 'quota_exhausted'
      ? `the quota of every key for ${error.model} is gone`
      : `every key refused for ${error.model}`
  }
  return error.reason === 'quota_exhausted'
    ? 'the quota of every key is gone'
    : 'every key rejected'
}

/** `context_too_long` → `context too long` (every underscore, not the first). */
export function kindName(kind: string): string {
  return kind.replaceAll('_', ' ')
}

/**
 * True when `guard` matches `error` or anything it was caused by: `cause`
 * chains and the per-model causes of a `ModelUnavailable` (a client that
 * left ends the call wherever it was).
 */
function causedBy(error: unknown, guard: (e: unknown) => boolean, depth = 0): boolean {
  if (error === null || typeof error !== 'object' || depth > 8) return guard(error)
  if (guard(error)) return true
  // Each read on its own (fieldOf never throws): a value whose reads throw (a
  // revoked Proxy, a throwing getter of `cause` or `causes`) is caused by
  // nothing known there, as core's guards answer, and hides no other field
  // or member.
  const cause = fieldOf(error, 'cause')
  if (cause !== undefined && causedBy(cause, guard, depth + 1)) return true
  let causes: unknown[] | undefined
  try {
    const list = fieldOf(error, 'causes')
    // Copied: a revoked Proxy of an array throws here, not midway.
    causes = Array.isArray(list) ? [...list] : undefined
  } catch {
    return false
  }
  return (
    causes?.some(
      (c) => causedBy(c, guard, depth + 1) || causedBy(fieldOf(c, 'cause'), guard, depth + 1),
    ) ?? false
  )
}

/**
 * Admission refused because the provider is cooling after an overload: the
 * answer an overload gets (503 `overloaded`), not a 429 that tells the client
 * it is over a limit of its own; `Retry-After` says when the cooldown ends.
 */
function overloadReply(provider: string, retryAfterMs: number): ErrorReply {
  return reply(
    503,
    `${provider} is overloaded: retry after ${Math.ceil(retryAfterMs)} ms`,
    'server_error',
    'overloaded',
    null,
    Number.isFinite(retryAfterMs) ? retryHeaders(retryAfterMs) : {},
  )
}

/**
 * Codes whose limit is this model's route (the providers of one model's
 * list), not the gateway's: its 503 `overloaded` and its 429
 * `insufficient_quota` (a provider's quota spent) say so in
 * `x-hourglass-cooldown-scope`, and a client that is itself an
 * @hourglass/llm adapter (a gateway in front of this one) cools or retires
 * that model only, and keeps sending the others. (A rate limit is a
 * model's already, by llm's own rule.)
 */
const ROUTE_SCOPED: ReadonlySet<string> = new Set(['overloaded', 'insufficient_quota'])

/**
 * Admission refused with nothing sent. When no wait helps (`retryAfterMs`
 * Infinity) its reason is the client's news: which limit the request alone
 * exceeds, with both numbers — the provider's TPM limit, or, while Redis is
 * unavailable, this instance's share of it (a smaller request, or the same
 * one once Redis is back, goes through). Token counts and instance counts
 * only: nothing of the provider's own.
 */
function rateLimitReply(
  provider: string,
  retryAfterMs: number,
  reason: string,
  byTokens: boolean,
): ErrorReply {
  const finite = Number.isFinite(retryAfterMs)
  return reply(
    429,
    finite
      ? `${provider} is rate limited: retry after ${Math.ceil(retryAfterMs)} ms`
      : `${provider}: ${reason}`,
    byTokens ? 'tokens' : 'requests',
    'rate_limit_exceeded',
    null,
    finite ? retryHeaders(retryAfterMs) : NO_RETRY,
  )
}

/**
 * `Retry-After` in whole seconds (at least 1) and OpenAI's `retry-after-ms`,
 * never more than the gateway's own cooldown holds (admission caps a
 * provider's hint at `DEFAULT_MAX_RETRY_AFTER_MS`, 60 s): a provider's
 * `Retry-After: 86400` would otherwise tell clients to stay away for a day
 * from a gateway that takes requests again within a minute.
 *
 * Spread later by up to `RETRY_SPREAD` of the wait (at most
 * `MAX_RETRY_SPREAD_MS`), never earlier: every client refused during one
 * cooldown is told the same instant, its end, and openai-node sleeps
 * `retry-after-ms` exactly (no jitter of its own), so a burst refused
 * together would come back together, at the moment the provider is least
 * ready for it.
 */
function retryHeaders(retryAfterMs: number): Record<string, string> {
  const wait = Math.min(retryAfterMs, DEFAULT_MAX_RETRY_AFTER_MS)
  const spread = Math.random() * Math.min(wait * RETRY_SPREAD, MAX_RETRY_SPREAD_MS)
  const ms = Math.max(0, Math.ceil(Math.min(wait + spread, DEFAULT_MAX_RETRY_AFTER_MS)))
  return { 'retry-after': String(Math.max(1, Math.ceil(ms / 1000))), 'retry-after-ms': String(ms) }
}

/** How much later than a cooldown's end a refused client may be told to come back, as a share of its wait. */
const RETRY_SPREAD = 0.1
/** …and at most this (a minute's cooldown spreads its returns over 2 s). */
const MAX_RETRY_SPREAD_MS = 2000

/**
 * Every error body the gateway writes. Its message and `param` may quote
 * what the client sent (a field's name, a stop sequence llm names) or what
 * a provider said: anything unprintable left in them is escaped here, the
 * one place every reply passes.
 */
function reply(
  status: number,
  message: string,
  type: string,
  code: string,
  param: string | null = null,
  headers: Record<string, string> = {},
): ErrorReply {
  return {
    status,
    headers: ROUTE_SCOPED.has(code)
      ? { ...headers, 'x-hourglass-cooldown-scope': 'model' }
      : headers,
    body: {
      error: {
        message: escapeUnprintable(message),
        type,
        param: param === null ? null : escapeUnprintable(param),
        code,
      },
    },
  }
}
