import { cutText, MAX_TIMER_MS } from '@hourglass/core'
import { type ErrorKind, RETRYABLE_KINDS } from '../errors/errorKinds.js'
import { limitKindOf } from '../errors/limitKindOf.js'
import { codeLine, MAX_CODE_CHARS } from '../errors/printableError.js'
import { MAX_PROVIDER_TEXT_CHARS, printableLine, redactSecrets } from '../text/providerText.js'
import type { CooldownScope, NormalizedError, OverLimit, RateLimitedBy } from '../types.js'
import type { ErrorInput } from './ErrorInput.js'
import { headerValue, retryAfterFromHeaders, shouldRetryHeader } from './errorHeaders.js'
import { looksLikeWebPage } from './looksLikeWebPage.js'
import { limitedByCode, limitedByHeaders, limitedByText } from './rateLimitedBy.js'
import { parseAnswerJson, parseJson } from './safeJson.js'
import { parseSseFramedJson } from './sseErrorBody.js'

/** What a dialect read from an error body. Every field is optional. */
export interface BodyVerdict {
  /** The provider's code, as it sent it. */
  providerCode?: string | undefined
  /** The request field it names as the problem (OpenAI's `param`). */
  param?: string | undefined
  message?: string | undefined
  /** The kind the provider's code means. Wins over the status. */
  kind?: ErrorKind | undefined
  /** A guess from the text (e.g. "overloaded"): used only without `x-should-retry`. */
  heuristicKind?: ErrorKind | undefined
  /** A wait found in the body (Gemini `RetryInfo`), used when headers give none. */
  retryAfterMs?: number | undefined
  /**
   * A wait read from the message's words (OpenAI's "Please try again in
   * 7m12s."), used when neither headers nor `retryAfterMs` give one — and
   * for a rate limit only: a server error's "try again in 30s" or a spent
   * quota's says nothing a cooldown should act on (a quota with a wait is
   * cooled, not retired).
   */
  messageWaitMs?: number | undefined
  /**
   * `messageWaitMs` is a per-day limit's ("… on requests per day (RPD) …"):
   * it beats the rate-limit reset headers, which count the per-minute
   * limits — a spent daily limit retried when the minute's count refills
   * is refused again, every few seconds, until the day's count does.
   */
  messageWaitPerDay?: boolean | undefined
  /** What the limit applies to, when the body says (Gemini's quota dimensions). */
  scope?: CooldownScope | undefined
  /**
   * `day`: a spent quota that counts per day (Gemini's `…PerDay…` quotas).
   * Its wait is the day, whatever shorter wait the provider hints: asked
   * again after `RetryInfo`'s seconds it is refused again until the reset.
   */
  quotaWindow?: 'day' | undefined
  /**
   * The kind is a spent quota that no wait lifts (Anthropic's monthly spend
   * cap: access resumes on the first of the next month): a `retry-after` on
   * it is the 429 machinery's, minutes long, and is not kept. Kept, the key
   * was cooled for it and probed again, refused each time, all month,
   * instead of retired as a quota without a wait is.
   */
  noWaitLifts?: boolean | undefined
  /** The limit a `request_too_large` request alone exceeds, when the message names it. */
  overLimit?: OverLimit | undefined
  /** Which limit a rate limit hit, when the body's fields say (not its words: `limitedByText`). */
  limitedBy?: RateLimitedBy | undefined
  /**
   * The body says the request was at fault without naming a kind (OpenAI's
   * `invalid_request_error`, vLLM's `BadRequestError` with `code: 400`).
   * A status says so better: read only for an error inside a 2xx answer
   * (its body, a stream's frame), which is then not retryable (`classifyError`).
   */
  requestFault?: boolean | undefined
  /**
   * The provider refuses requests from where this host is — its country or
   * region (OpenAI's 403 `unsupported_country_region_territory`, Gemini's
   * "User location is not supported" without billing named; not Anthropic's
   * 403 `forbidden`, which comes for one credential too and stays `auth`) —,
   * whichever key they carry. Not the key's fault, nor the
   * request's: a `server_error` that is not retryable (`x-should-retry`
   * notwithstanding: the host stays where it is), so no key is retired,
   * this model is not asked again, and a fallback may answer; the message
   * says so. Read as `auth` (the status's), it retired the key, moved to
   * the next key — refused the same way — and retired that too.
   */
  locationRefused?: boolean | undefined
}

/**
 * Reads a parsed body (or `undefined` when it was not JSON) and says whether
 * it describes an error. Returning undefined for a 2xx means success; for a
 * non-2xx it means "nothing provider-specific", so the status decides.
 */
export type BodyReader = (json: unknown, text: string, status: number) => BodyVerdict | undefined

const DAY_S = 24 * 60 * 60
const PACIFIC = new Intl.DateTimeFormat('en-US', {
  timeZone: 'America/Los_Angeles',
  hourCycle: 'h23',
  hour: 'numeric',
  minute: 'numeric',
  second: 'numeric',
})

/**
 * The wait of a spent per-day quota (`BodyVerdict.quotaWindow`): until the
 * next midnight Pacific time, when Gemini's requests-per-day quotas reset
 * (ai.google.dev/gemini-api/docs/rate-limits), at least a second. A flat
 * day overshot the reset by up to 24 h for anyone whose `maxRetryAfterMs`
 * lets a cooldown run that long. On a day that changes the clocks it is an
 * hour off, either way.
 */
export function msUntilQuotaDay(nowMs: number): number {
  const parts = PACIFIC.formatToParts(new Date(nowMs))
  const part = (type: Intl.DateTimeFormatPartTypes) =>
    Number(parts.find((p) => p.type === type)?.value ?? 0)
  const intoDayS = part('hour') * 3600 + part('minute') * 60 + part('second')
  const ms = (DAY_S - intoDayS) * 1000 - (((nowMs % 1000) + 1000) % 1000)
  return Math.min(DAY_S * 1000, Math.max(1000, ms))
}
/**
 * How much of a message keys and key-shaped words are searched in before
 * the cut: a body's words past it are never shown. Every pattern is linear,
 * so a hostile body costs this much at most; wide, so only a redacted
 * token of more than 15 500 characters can pull what lies past it into view.
 */
const MAX_WINDOW_CHARS = 32 * MAX_PROVIDER_TEXT_CHARS
/** Text sniffing never looks past this much of a body: hostile bodies can be huge. */
const MAX_SNIFF_CHARS = 4096

/**
 * The rules every dialect shares: parse safely, let the dialect read the
 * body, then decide the kind (provider code > text heuristic when
 * `x-should-retry` is absent > status) and retryability (`x-should-retry` >
 * kind, except for a refusal the body names that no retry lifts: see
 * `retryable` below). Never throws: whatever goes wrong, the status still
 * classifies.
 *
 * An error body (not 2xx) that is not JSON but SSE-framed JSON — `data:
 * {"error":…}`, what some providers answer a streaming request with, Qwen's
 * 400 for a filtered input — is read as the JSON it frames: the dialect sees
 * that JSON and its text, and the message falls back to that text.
 */
export function classifyError(input: ErrorInput, read: BodyReader): NormalizedError | undefined {
  const status = Number.isInteger(input?.status) ? input.status : 0
  let text = typeof input?.body === 'string' ? input.body : ''
  const ok = status >= 200 && status < 300
  let verdict: BodyVerdict | undefined
  let json: unknown
  try {
    // A 2xx body is the answer (or a stream event after a 200): parsed
    // whatever its size, as the response parser will parse it — bounded by
    // the adapter's read limit, not by the error-body guard.
    json = input?.json !== undefined ? input.json : ok ? parseAnswerJson(text) : parseJson(text)
    if (json === undefined && !ok) {
      const framed = parseSseFramedJson(text)
      if (framed !== undefined) ({ json, text } = framed)
    }
    verdict = read(json, text, status)
  } catch {
    verdict = undefined
  }
  if (ok && verdict === undefined) return undefined
  let shouldRetry: boolean | undefined
  let headerWaitMs: number | undefined
  const kindFromBody = verdict?.kind
  try {
    shouldRetry = shouldRetryHeader(input.headers)
  } catch {
    shouldRetry = undefined
  }
  // The text check ("overloaded" in the body, Anthropic's overloaded_error
  // off a 529) reads 5xx answers and errors after a 200 (bodies, stream
  // frames). A 4xx is the provider answering about this request or account:
  // a word in its message ("Invalid schema for function 'is_overloaded'")
  // never makes it an overload; only a provider code does (Doubao's
  // ServerOverloaded 429).
  const heuristic =
    shouldRetry === undefined && (status < 400 || status >= 500)
      ? (verdict?.heuristicKind ?? (kindFromBody ? undefined : sniffKind(text)))
      : undefined
  // A 403 that is not JSON is a page from whatever stands in front of the
  // provider — a CDN's firewall (Cloudflare's "Sorry, you have been
  // blocked", "error code: 1020"), a proxy's filter — and is often set off
  // by what the request says. Every provider answers a bad key with a JSON
  // error. Read as `auth`, such a page retired the key, and at once the
  // next key the call moved to: a client's request could disable the
  // provider for every client until a restart. It judges the request, not
  // the key: nothing is retired, the same model is not asked again (the same
  // request meets the same filter), and a fallback may answer.
  //
  // So is a web page with a status the client's bad request would have
  // (400, 422, 405, 431…): every provider words a bad request as a JSON
  // error. nginx's 400 "The plain HTTP request was sent to HTTPS port" is
  // the operator's base URL pointing a plain request at a TLS port; as
  // `bad_request` it refused the call with no fallback tried, and told the
  // client to fix a request nothing was wrong with; so is Go's text saying
  // the same (PLAIN_HTTP_TO_TLS). (Other plain text, or nothing, with such a
  // status still classifies by status.)
  const inFront =
    kindFromBody === undefined &&
    json === undefined &&
    (status === 403 ||
      (status >= 400 &&
        status < 500 &&
        kindFromStatus(status) === 'bad_request' &&
        (looksLikeWebPage(text) || PLAIN_HTTP_TO_TLS.test(text))))
  const locationRefused = verdict?.locationRefused === true
  const named =
    inFront || locationRefused
      ? 'server_error'
      : (kindFromBody ?? heuristic ?? (ok ? 'server_error' : kindFromStatus(status)))
  // A 429, 503 or 529 whose body names only a generic failure (OpenAI's 503
  // "The engine is currently overloaded" is `type: server_error`, Anthropic's
  // `api_error`, Gemini's `INTERNAL`…) is the limit its status says, as
  // admission has always counted it: the kind every reader then sees
  // (`limitKindOf`), not a backoff retry that the cooldown holds back.
  const kind = limitKindOf({ kind: named, status }) ?? named
  // The caller's clock (a test's, a replay's), for header dates and a
  // quota's day alike; a value that is no time is the system clock's.
  const nowMs =
    typeof input.nowMs === 'number' && Number.isFinite(input.nowMs) ? input.nowMs : Date.now()
  const messageWaitMs = kind === 'rate_limited' ? verdict?.messageWaitMs : undefined
  // A per-day limit's own wait: the reset headers (per-minute counts) may
  // lengthen it, never shorten it; `Retry-After` is still the provider's word.
  const perDayWaitMs = verdict?.messageWaitPerDay === true ? messageWaitMs : undefined
  try {
    headerWaitMs =
      retryAfterFromHeaders(input.headers, { nowMs, useResetHeaders: false }) ??
      (kind === 'rate_limited'
        ? maxDefined(
            retryAfterFromHeaders(input.headers, { nowMs, useResetHeaders: true }),
            perDayWaitMs,
          )
        : undefined)
  } catch {
    headerWaitMs = perDayWaitMs
  }
  // Capped as the headers' waits are (a body's "999999h" is no timer's): the
  // field reaches reasons and the gateway's Retry-After as it is.
  const givenMs = headerWaitMs ?? verdict?.retryAfterMs ?? messageWaitMs
  const hintMs = givenMs === undefined ? undefined : Math.min(givenMs, MAX_TIMER_MS)
  const retryAfterMs =
    verdict?.noWaitLifts === true
      ? undefined
      : verdict?.quotaWindow === 'day'
        ? Math.max(msUntilQuotaDay(nowMs), hintMs ?? 0)
        : hintMs
  // Only for a rate limit: the field says nothing on any other failure.
  let limitedBy: RateLimitedBy | undefined
  if (kind === 'rate_limited') {
    try {
      limitedBy =
        verdict?.limitedBy ??
        limitedByCode(verdict?.providerCode) ??
        limitedByHeaders(input.headers) ??
        limitedByText(verdict?.message ?? text)
    } catch {
      limitedBy = undefined
    }
  }
  // Words of hidden characters only (a NUL, a zero-width space) are cleaned
  // away: the status then says what there is to say, as for an empty body —
  // but a bare "HTTP 200" would read as a success: an error inside a 2xx
  // answer (a stream's error event, a body that is an error) says so.
  const message =
    cleanMessage(
      inFront
        ? `HTTP ${status} that is not the provider's JSON error (a ${status === 403 ? "firewall's or " : ''}proxy's page?): refused in front of the provider${status === 403 ? ', no key judged' : ''}${text.trim() === '' ? '' : `: ${text.trim()}`}`
        : locationRefused
          ? `HTTP ${status}: the provider refuses this host's country or region (every key gets the same answer, no key is at fault)${verdict?.message?.trim() ? `: ${verdict.message.trim()}` : ''}`
          : (verdict?.message ??
            (text.trim() || redirectMessage(status, input.headers) || `HTTP ${status}`)),
    ) ||
    (ok ? `an error inside an HTTP ${status} answer, with no readable message` : `HTTP ${status}`)
  // Keys redacted before the cut, as the message's are.
  const providerCode = codeOf(verdict?.providerCode)
  const param = codeOf(verdict?.param)
  // An error inside a 2xx answer (a stream's frame after the 200, a body)
  // that blames the request and names no kind: OpenAI's
  // `invalid_request_error` mid-stream (a reasoning model's `invalid_prompt`),
  // and vLLM's stream generator, which labels what it raised
  // `BadRequestError`/400 — engine failures among them (its RuntimeErrors).
  // The provider had taken the request and started on it, so it may bill
  // it: asked again it was refused again, each time at a cost. Not resent
  // to this model; not `bad_request` either (request-bound: no fallback),
  // since the label cannot tell a bad request from an engine's failure — a
  // fallback may answer. A frame whose words say overload keeps that.
  const blamesRequest =
    ok && kindFromBody === undefined && heuristic === undefined && verdict?.requestFault === true
  // A refusal the body names (its code or its words) that no retry lifts —
  // a spent quota, a rejected key, a refused content or request — stays
  // one whatever `x-should-retry` says. The header is the provider's 429
  // and 5xx machinery's, and rides on answers it knows nothing of:
  // Anthropic's monthly spend limit comes as a 429 with `x-should-retry:
  // true`, and was tried again `maxAttempts` times (Anthropic's SDK, which
  // reads no body, obeys it). `false` still stops a retry; on a status
  // alone, with no kind in the body, `true` still has its say — and on a
  // plain `bad_request`, which a body names by its type alone
  // (`invalid_request_error` on a 409 the provider expects to clear).
  const neverRetried =
    kindFromBody !== undefined && kind !== 'bad_request' && !RETRYABLE_KINDS.has(kind)
  // The dialect's word on what the limit holds back, else the upstream's own.
  const scope = verdict?.scope ?? scopeHeader(input.headers)
  return {
    kind,
    // A provider that does not know the model (or path) asked for does not
    // learn it on a second try, whatever its `x-should-retry` says: true
    // there made the gateway's 502 a retry for the client's SDK too.
    retryable:
      kind === 'not_found' || blamesRequest || locationRefused || neverRetried
        ? false
        : (shouldRetry ?? (inFront ? false : RETRYABLE_KINDS.has(kind))),
    status,
    ...(providerCode === undefined ? {} : { providerCode }),
    ...(param === undefined ? {} : { param }),
    message,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    ...(scope === undefined ? {} : { scope }),
    ...(verdict?.quotaWindow === undefined ? {} : { quotaWindow: verdict.quotaWindow }),
    ...(verdict?.overLimit === undefined || kind !== 'request_too_large'
      ? {}
      : { overLimit: verdict.overLimit }),
    ...(limitedBy === undefined ? {} : { limitedBy }),
  }
}

/**
 * What the upstream says its limit holds back (`x-hourglass-cooldown-scope`):
 * an @hourglass/gateway routes per model, so its 503 `overloaded` and 429
 * `insufficient_quota` for one model are that route's, not every model's
 * behind its base URL.
 */
function scopeHeader(headers: ErrorInput['headers']): CooldownScope | undefined {
  const value = headerValue(headers, 'x-hourglass-cooldown-scope')?.trim().toLowerCase()
  return value === 'model' || value === 'key' || value === 'provider' ? value : undefined
}

function maxDefined(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.max(a, b)
}

/**
 * The status alone. 408/409/429/≥500 are worth another try (409 is a lock
 * or conflict the provider expects to clear); 529 and 503 are overload
 * (Anthropic's 529, DeepSeek's and Gemini's 503); 504 is the provider's own
 * timeout.
 */
export function kindFromStatus(status: number): ErrorKind {
  switch (status) {
    case 400:
    case 422:
      return 'bad_request'
    case 401:
    case 403:
      return 'auth'
    case 402:
      return 'quota_exhausted'
    case 404:
      return 'not_found'
    case 408:
      return 'timeout'
    case 409:
      return 'server_error'
    case 413:
      // Content Too Large: the HTTP body over a size limit (Anthropic's 32 MB,
      // a proxy's), not the context window — another provider may take it.
      return 'request_too_large'
    case 429:
      return 'rate_limited'
    case 503:
    case 529:
      return 'overloaded'
    case 504:
      return 'timeout'
  }
  if (status >= 500) return 'server_error'
  if (status >= 400) return 'bad_request'
  // Adapters do not follow redirects: the model is not at this address, and
  // asking it again will not move it.
  if (status >= 300 && status < 400) return 'not_found'
  return 'server_error'
}

/** A 3xx says where the endpoint went: the operator's fix is the base URL. */
function redirectMessage(status: number, headers: ErrorInput['headers']): string | undefined {
  if (status < 300 || status >= 400) return undefined
  // headerValue never throws: a hostile Headers-like object reads as absent.
  const location = headerValue(headers, 'location')
  return `HTTP ${status}: the provider redirected${location ? ` to ${addressOf(location).slice(0, 200)}` : ''}; adapters do not follow redirects: set baseURL to the new address`
}

/** A `;` and what follows it up to the segment's end (the next `/`). */
const PATH_PARAMS = /;[^/]*/g

/** The user info of a protocol-relative reference: after its two slashes, up to the authority's last `@`. */
const RELATIVE_USERINFO = /^([\s\p{Cc}]*[/\\]{2,})[^/\\]*@/u

/** What the URL parser drops wherever it stands in a URL. */
const TABS_AND_BREAKS = /[\t\n\r]/g

/**
 * A `Location` as the message shows it: scheme, host, path and the names of
 * its query's parameters, every value `[redacted]`; no fragment, no
 * credentials. The message is logged, and a redirect to a login page or a
 * signed URL carries a token or a signature in its query under any name
 * (`token=`, `sig=`, `X-Amz-Signature=`), where only `key=` and
 * `access_token=` were redacted. The new base URL is what the operator needs.
 */
function addressOf(location: string): string {
  const hash = location.indexOf('#')
  const text = hash === -1 ? location : location.slice(0, hash)
  const q = text.indexOf('?')
  let address = q === -1 ? text : text.slice(0, q)
  try {
    const url = new URL(address)
    if (url.protocol === 'http:' || url.protocol === 'https:') address = url.origin + url.pathname
  } catch {
    // Relative (or no URL at all): shown as it came, up to its query — but
    // for the credentials of a protocol-relative one (`//user:pw@host/…`,
    // `\\user:pw@host`), cut to the authority's last `@`.
    // Tabs and line breaks first: the URL parser drops them, so `/\t/user:pw@host`
    // is read as `//user:pw@host`.
    address = address.replace(TABS_AND_BREAKS, '').replace(RELATIVE_USERINFO, '$1')
  }
  // Each path segment's parameters too: a servlet container's session
  // (`;jsessionid=…`) rides there, as @hourglass/fetch cuts it from URLs it shows.
  if (address.includes(';')) address = address.replace(PATH_PARAMS, '')
  if (q === -1) return address
  const names = text
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=')
      return eq === -1 ? '[redacted]' : `${pair.slice(0, Math.min(eq, 40))}=[redacted]`
    })
  return `${address}?${names.join('&')}`
}

/**
 * Go's net/http answer to plain HTTP on a TLS port, as text (Caddy,
 * Traefik, Go relays such as one-api): the same misconfiguration as nginx's
 * HTML 400 page, never a provider's words about a request.
 */
const PLAIN_HTTP_TO_TLS = /^\s*Client sent an HTTP request to an HTTPS server\.?\s*$/

/**
 * "overloaded" in any case. Without the `u` flag, `i` folds only ASCII
 * letters onto these ASCII ones (ES Canonicalize), as `toLowerCase` then
 * `includes` did, without a lowered copy of up to 4 KiB per error.
 */
const OVERLOADED = /overloaded/i

/** Text heuristics for bodies without a recognised code. */
function sniffKind(text: string): ErrorKind | undefined {
  if (OVERLOADED.test(text.slice(0, MAX_SNIFF_CHARS))) return 'overloaded'
  return undefined
}

/**
 * Shorter values are not searched for: a key of a few characters (`sk`,
 * `test`, what tests and local servers use) is also part of ordinary words,
 * and replacing it would garble every message; no provider issues keys that
 * short (theirs are 32 characters and more).
 */
export const MIN_REDACTED_KEY_CHARS = 8

/**
 * The exact secret values in force for the current synchronous call (see
 * `withKeysRedacted`): what `cleanMessage` and the provider code redact by
 * value. Module state is safe here only because everything that reads it
 * runs synchronously inside `withKeysRedacted`.
 */
let activeKeys: readonly string[] = []

/**
 * The values `redactKeys` searches for, from an adapter's keys: those long
 * enough to tell from words (`MIN_REDACTED_KEY_CHARS`), once each, longest
 * first — so a key that contains another is replaced whole, not around the
 * shorter one.
 */
export function redactableKeys(keys: Iterable<string>): readonly string[] {
  const out = new Set<string>()
  for (const key of keys) {
    if (typeof key === 'string' && key.length >= MIN_REDACTED_KEY_CHARS) out.add(key)
  }
  return [...out].sort((a, b) => b.length - a.length)
}

/**
 * Runs `fn` with `keys` (from `redactableKeys`) redacted by value from every
 * message and provider code `classifyError` builds while it runs, before
 * anything is cut — a key cut in two by the 500-character limit would be
 * found by neither exact search nor key-shape pattern afterwards. For the
 * adapter, which knows the keys it sends: the dialects' normalisers, which
 * call `classifyError`, do not (and a provider may echo a key of any shape —
 * Ark's are UUIDs). `fn` must be synchronous: the keys are in force only
 * until it returns.
 */
export function withKeysRedacted<T>(keys: readonly string[], fn: () => T): T {
  if (keys.length === 0 && activeKeys.length === 0) return fn()
  const outer = activeKeys
  activeKeys = keys
  try {
    return fn()
  } finally {
    activeKeys = outer
  }
}

/** `text` with every occurrence of each of `keys` (from `redactableKeys`) replaced by `[redacted]`. */
export function redactKeys(text: string, keys: readonly string[]): string {
  let out = text
  for (const key of keys) {
    if (out.includes(key)) out = out.replaceAll(key, '[redacted]')
  }
  return out
}

/**
 * At most `max` characters of `text`, `keys` redacted first: the search
 * looks a key's length past the cut, so a key that the cut would split is
 * still found whole. Redacting shortens the text and pulls what followed
 * toward the cut, so the window grows by what was taken out: no piece of a
 * key the window itself split can end up before the cut.
 */
export function cutRedacted(text: string, max: number, keys: readonly string[]): string {
  if (keys.length === 0) return text.length > max ? text.slice(0, max) : text
  const longest = keys[0]?.length ?? 0
  let margin = max + longest
  for (;;) {
    const window = text.length > margin ? text.slice(0, margin) : text
    const out = redactKeys(window, keys)
    const shrunk = window.length - out.length
    if (window.length === text.length || margin >= max + longest + shrunk) {
      return out.length > max ? out.slice(0, max) : out
    }
    margin = max + longest + shrunk
  }
}

/**
 * Provider messages can echo a key ("Incorrect API key provided: sk-…").
 * Redact the keys in force (`withKeysRedacted`: the adapter's own, by exact
 * value, whatever their shape) and anything key-shaped — organisation ids
 * and URL credentials too — then put it on one printable line
 * (`printableLine`) and cut to 500 characters. Patterns run on a wider
 * window (`MAX_WINDOW_CHARS`) before the cut: an id or URL the cut split
 * matches no pattern afterwards, and its first half would leak.
 */
export function cleanMessage(text: string, keys: readonly string[] = activeKeys): string {
  let out = cutRedacted(text, MAX_WINDOW_CHARS, keys)
  const cut = text.length > MAX_WINDOW_CHARS && out.length >= MAX_WINDOW_CHARS
  // Cut at the window's last space: every secret the patterns find is one
  // word, so none then straddles the end, half-matched and half-shown —
  // what a long token's redaction (a 16 000-character bearer token's to 10)
  // would pull into the first 500 characters.
  if (cut) out = out.slice(0, lastSpaceAt(out))
  out = redactSecrets(out)
  // The first 501 characters make the 500 shown (past 500, `…` says there
  // was more) unless hidden runs shrank them: then, up to `MAX_LINE_CHARS`
  // — a message of 16 000 characters is cleaned at the cost of 2 000.
  if (out.length > MAX_PROVIDER_TEXT_CHARS + 1) {
    const first = printableLine(out.slice(0, MAX_PROVIDER_TEXT_CHARS + 1))
    if (first.length > MAX_PROVIDER_TEXT_CHARS) return cutText(first, MAX_PROVIDER_TEXT_CHARS)
  }
  const more = cut || out.length > MAX_LINE_CHARS
  const line = printableLine(more ? out.slice(0, MAX_LINE_CHARS) : out)
  if (!more) return cutText(line, MAX_PROVIDER_TEXT_CHARS)
  // Nothing printable in it: no `…` alone (the caller says the status).
  if (line === '') return ''
  // Cut: said, however short the redaction or the hidden runs left what is shown.
  return line.length < MAX_PROVIDER_TEXT_CHARS
    ? `${line}…`
    : cutText(`${line}…`, MAX_PROVIDER_TEXT_CHARS)
}

/** The most of a redacted message `cleanMessage` puts on one line (`printableLine`). */
const MAX_LINE_CHARS = 4 * MAX_PROVIDER_TEXT_CHARS

/** A provider's code or `param`: the keys in force redacted before the cut, as a message's are. */
function codeOf(code: string | undefined): string | undefined {
  return code === undefined ? undefined : codeLine(cutRedacted(code, MAX_CODE_CHARS, activeKeys))
}

const SPACE = /\s/

/**
 * Where `text`'s last whitespace (`\s`) is; its length when it has none
 * (one word: nothing to cut back to). ASCII is answered by its code (`\s`
 * there is tab to carriage return and the space): a one-character string
 * and a regex test per character made a 16 000-character word cost ~1 ms.
 */
function lastSpaceAt(text: string): number {
  for (let i = text.length - 1; i > 0; i--) {
    const c = text.charCodeAt(i)
    if (c < 0x80 ? c === 0x20 || (c >= 0x09 && c <= 0x0d) : SPACE.test(text[i] ?? '')) return i
  }
  return text.length
}

/**
 * The stream flavour: one SSE event after an HTTP 200. An `event: error`
 * frame is an error whatever its data says; any other frame is one only if
 * the dialect's reader finds an error in it. No headers exist mid-stream, so
 * body heuristics always apply.
 */
export function classifyStreamError(
  frame: { event: string | undefined; data: string },
  read: BodyReader,
): NormalizedError | undefined {
  const data = typeof frame?.data === 'string' ? frame.data : ''
  const isErrorEvent = frame?.event === 'error'
  return classifyError({ status: 200, body: data }, (json, text, status) => {
    const verdict = read(json, text, status)
    return verdict ?? (isErrorEvent ? { message: text || 'error event' } : undefined)
  })
}
