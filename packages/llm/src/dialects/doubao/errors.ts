import type { ErrorKind, NormalizedError } from '../../types.js'
import { type BodyVerdict, classifyError, classifyStreamError } from '../classifyError.js'
import type { ErrorInput, StreamErrorInput } from '../ErrorInput.js'
import { lookup, readOpenAIError } from '../openai/errors.js'

/** Volcengine Ark codes used whole; families are matched by prefix below. */
const DOUBAO_CODES: Readonly<Record<string, ErrorKind>> = {
  ServerOverloaded: 'overloaded',
  AccountOverdueError: 'quota_exhausted',
  // A 429 of three meanings, told apart by its words (`quotaExceeded`).
  QuotaExceeded: 'quota_exhausted',
  // 429 "Your account … has reached the set inference limit for the … model,
  // and the model service has been paused" ("Safe Experience Mode"): the
  // account's own per-model token cap, raised only by hand in the console
  // (volcengine/ark-cli#15). As the status's rate limit it was retried and
  // cooled again and again, never lifted by a wait.
  SetLimitExceeded: 'quota_exhausted',
  // 400 "The request targeted an endpoint that is currently closed or
  // temporarily unavailable" (Ark's common error codes: try again later, or
  // ask the endpoint's administrator). Nothing in the request is at fault:
  // as the status's `bad_request` the call failed with no fallback tried.
  'InvalidEndpoint.ClosedEndpoint': 'server_error',
  // 400 "Internal error … CSD code: …; CSD message: …" (Ark's table: the
  // Volcengine risk-detection product's request failed): the filter broke,
  // not the request. As the status's `bad_request` the call failed with no
  // retry and no fallback, and a client was told to fix its request.
  ContentSecurityDetectionError: 'server_error',
  // 400 `OutofContextError`, "Total tokens of image and text exceed max
  // message tokens." (Ark's error-code table: the text and images, encoded,
  // over the model's context window). A code of its own, no
  // `InvalidParameter` prefix, so the words were never read (below): as the
  // status's `bad_request` the call failed with no prompt-too-long step
  // (`collapse`, `compact`) run, where a smaller history is what Ark asks for.
  OutofContextError: 'context_too_long',
  AuthenticationError: 'auth',
  AccessDenied: 'auth',
  InternalServiceError: 'server_error',
  ModelNotOpen: 'not_found',
  'InvalidEndpointOrModel.NotFound': 'not_found',
  'InvalidEndpoint.NotFound': 'not_found',
  ModelAccountRpmRateLimitExceeded: 'rate_limited',
  ModelAccountTpmRateLimitExceeded: 'rate_limited',
}

const DOUBAO_PREFIXES: ReadonlyArray<readonly [string, ErrorKind]> = [
  ['RateLimitExceeded', 'rate_limited'],
  ['SensitiveContentDetected', 'content_policy'],
  ['InvalidParameter', 'bad_request'],
  ['MissingParameter', 'bad_request'],
]

/**
 * Ark's content filters name the medium and direction they judged
 * (`InputTextSensitiveContentDetected`, `OutputImageSensitiveContentDetected`,
 * `InputVideoSensitiveContentDetected.PrivacyInformation`…), and the
 * Volcengine risk-detection product's verdicts the same way
 * (`InputTextRiskDetection`, `OutputImageRiskDetection`). Each is a 400: as
 * the status's `bad_request`, those the list of prefixes missed reached a
 * gateway's client as an invalid request, not the refusal they are.
 */
const FILTER_CODE =
  /^(?:Input|Output)(?:Text|Image|Video)(?:SensitiveContentDetected|RiskDetection)\b/

/**
 * Ark is OpenAI-shaped: `{"error":{"code","message","param","type"}}`. Its
 * 429 covers both limits (`RateLimitExceeded.EndpointRPMExceeded`) and
 * overload (`ServerOverloaded`), so the code, not the status, decides.
 */
function readDoubaoError(json: unknown, nowMs: number): BodyVerdict | undefined {
  const verdict = readOpenAIError(json, DOUBAO_CODES)
  if (verdict === undefined) return undefined
  const code = verdict.providerCode
  let kind = verdict.kind ?? lookup(DOUBAO_CODES, code)
  if (kind === undefined && code !== undefined) {
    kind =
      DOUBAO_PREFIXES.find(([prefix]) => code.startsWith(prefix))?.[1] ??
      (FILTER_CODE.test(code) ? 'content_policy' : undefined)
  }
  const message = verdict.message?.toLowerCase() ?? ''
  if (
    kind === 'bad_request' &&
    (message.includes('context') || message.includes('max message tokens'))
  ) {
    kind = 'context_too_long'
  }
  // The inference limit "Safe Experience Mode" sets is the model's, and
  // pauses that model alone ("… has reached the set inference limit for the
  // doubao-seed-1.6 model, and the model service has been paused"): the key
  // goes on serving every other model. Read as the key's, the spent quota
  // retired the key — for good, by default — and the call's fallback to
  // another Ark model on it was refused unsent, as was every later call.
  if (code === 'SetLimitExceeded') return { ...verdict, kind, scope: 'model' }
  // A plan's 5-hour, weekly or monthly quota names its reset (Ark's table:
  // "You have exceeded the 5-hour/weekly/monthly usage quota. It will reset
  // at {{reset_time}}."; sent as `AccountQuotaExceeded` too, e.g. "… It will
  // reset at 2026-08-27 16:44:34 +0800 CST."): the key's quota, spent until
  // then. As a quota with no wait it retired the key — for good, by
  // default — though it comes back within hours; as the status's rate limit
  // (`AccountQuotaExceeded`) it was retried after a backoff, refused again
  // each time until the reset.
  const resetMs =
    code === 'QuotaExceeded' || code === 'AccountQuotaExceeded'
      ? msUntilReset(message, nowMs)
      : undefined
  if (resetMs !== undefined) return { ...verdict, kind: 'quota_exhausted', retryAfterMs: resetMs }
  if (code === 'QuotaExceeded') return { ...verdict, ...quotaExceeded(message) }
  return { ...verdict, kind }
}

/**
 * The wait until "it will reset at 2026-08-27 16:44:34 +0800 cst" (the
 * message lower-cased), at least a second; `PAST_RESET_WAIT_MS` when that
 * time is already past; undefined when the words or the time are not there.
 */
function msUntilReset(message: string, nowMs: number): number | undefined {
  const found = RESET_AT.exec(message.slice(0, 500))
  if (found === null) return undefined
  const [y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, oh = 0, om = 0] = [
    ...found.slice(1, 7),
    ...found.slice(9, 11),
  ].map(Number)
  // Go prints a time with its fraction ("16:44:34.123456789 +0800 CST"):
  // rounded up, so the wait never ends before the reset.
  const fractionMs = Math.ceil(Number(`0${found[7] ?? ''}`) * 1000)
  const offsetMs = (found[8] === '-' ? -1 : 1) * (oh * 60 + om) * 60_000
  const atMs = Date.UTC(y, mo - 1, d, h, mi, sec, fractionMs) - offsetMs
  if (!Number.isFinite(atMs)) return undefined
  return atMs > nowMs ? Math.max(1000, atMs - nowMs) : PAST_RESET_WAIT_MS
}

/**
 * A quota refused past the reset it names (a clock skewed against Ark's, a
 * quota that failed to reset) says nothing of when it comes back. Floored at
 * a second, it cooled the key a second at a time — a hint, so no backoff
 * grew — and the key was asked again every second while the quota held (60
 * requests a minute). A minute is what a far reset waits too (capped by
 * `maxRetryAfterMs`, a minute by default): one probe a minute, and the key
 * back within one once its quota is.
 */
const PAST_RESET_WAIT_MS = 60_000

// No nested or overlapping quantifiers: linear on any text.
const RESET_AT =
  /it will reset at (\d{4})-(\d{2})-(\d{2})[ t](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})? ?([+-])(\d{2}):?(\d{2})/

/**
 * Ark's 429 `QuotaExceeded` says three things (its error-code table,
 * volcengine.com/docs/82379/1299023): "Your account [%s] has exhausted its
 * free trial quota for the [%s] model" — that model's free trial, spent
 * until the model is activated for pay: the key goes on serving the others;
 * "The request has exceeded the quota" — "the account's tasks waiting in
 * the queue are over the limit, please retry later": a rate, gone as the
 * queue drains; and a plan's 5-hour, weekly or monthly quota, the key's
 * (cooled until the reset it names, when it names one: above). Read whole
 * as the key's spent quota, the first
 * retired the key, so the call's fallback to another Ark model on it was
 * refused unsent; the second retired it — for good, by default — over a
 * queue that drains by itself.
 */
function quotaExceeded(message: string): Pick<BodyVerdict, 'kind' | 'scope'> {
  if (FREE_TRIAL_OF_MODEL.test(message)) return { kind: 'quota_exhausted', scope: 'model' }
  if (message.trimStart().startsWith('the request has exceeded the quota')) {
    return { kind: 'rate_limited' }
  }
  return { kind: 'quota_exhausted' }
}

// The message lower-cased; "[doubao-seed-1.6]" as the table writes it, or bare.
const FREE_TRIAL_OF_MODEL = /has exhausted its free trial quota for the \[?[^\s\]]{1,200}\]? model/

export function normalizeDoubaoError(input: ErrorInput): NormalizedError | undefined {
  // A plan's reset is a wall-clock time: measured from the caller's now, as
  // an HTTP-date `Retry-After` is.
  const nowMs =
    typeof input?.nowMs === 'number' && Number.isFinite(input.nowMs) ? input.nowMs : Date.now()
  return classifyError(input, (json) => readDoubaoError(json, nowMs))
}

export function normalizeDoubaoStreamError(frame: StreamErrorInput): NormalizedError | undefined {
  return classifyStreamError(frame, (json) => readDoubaoError(json, Date.now()))
}
