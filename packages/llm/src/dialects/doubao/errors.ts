import type { ErrorKind, NormalizedError } from '../../types.js'
import { type BodyVerdict, classifyError, classifyStreamError } from '../classifyError.js'
import type { ErrorInput, StreamErrorInput } from '../ErrorInput.js'
import { lookup, readOpenAIError } from '../openai/errors.js'

/** Volcengine Ark codes used whole; families are matched by prefix below. */
const DOUBAO_CODES: Readonly<Record<string, ErrorKind>> = {
  ServerOverloaded: 'overloaded',
  AccountOverdueError: 'quota_exhausted',
  QuotaExceeded: 'quota_exhausted',
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
  ['InputTextSensitiveContentDetected', 'content_policy'],
  ['OutputTextSensitiveContentDetected', 'content_policy'],
  ['InputImageSensitiveContentDetected', 'content_policy'],
  ['InvalidParameter', 'bad_request'],
  ['MissingParameter', 'bad_request'],
]

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
    kind = DOUBAO_PREFIXES.find(([prefix]) => code.startsWith(prefix))?.[1]
  }
  const message = verdict.message?.toLowerCase() ?? ''
  if (
    kind === 'bad_request' &&
    (message.includes('context') || message.includes('max message tokens'))
  ) {
    kind = 'context_too_long'
  }
  return { ...verdict, kind }
}

export function normalizeDoubaoError(input: ErrorInput): NormalizedError | undefined {
  return classifyError(input, readDoubaoError)
}

export function normalizeDoubaoStreamError(frame: StreamErrorInput): NormalizedError | undefined {
  return classifyStreamError(frame, readDoubaoError)
}
