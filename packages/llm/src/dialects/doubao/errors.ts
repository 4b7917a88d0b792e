import type { ErrorKind, NormalizedError } from '../../types.js'
import { type BodyVerdict, classifyError, classifyStreamError } from '../classifyError.js'
import type { ErrorInput, StreamErrorInput } from '../ErrorInput.js'
import { lookup, readOpenAIError } from '../openai/errors.js'

/** Volcengine Ark codes used whole; families are matched by prefix below. */
const DOUBAO_CODES: Readonly<Record<string, ErrorKind>> = {
  ServerOverloaded: 'overloaded',
  AccountOverdueError: 'quota_exhausted',
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
function readDoubaoError(json: unknown): BodyVerdict | undefined {
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
  return { ...verdict, kind }
}

export function normalizeDoubaoError(input: ErrorInput): NormalizedError | undefined {
  return classifyError(input, readDoubaoError)
}

export function normalizeDoubaoStreamError(frame: StreamErrorInput): NormalizedError | undefined {
  return classifyStreamError(frame, readDoubaoError)
}
