import type { ErrorKind, NormalizedError } from '../../types.js'
import { type BodyVerdict, classifyError, classifyStreamError } from '../classifyError.js'
import type { ErrorInput, StreamErrorInput } from '../ErrorInput.js'
import { lookup } from '../openai/errors.js'
import { getRecord, getString } from '../safeJson.js'

const ANTHROPIC_TYPES: Readonly<Record<string, ErrorKind>> = {
  rate_limit_error: 'rate_limited',
  api_error: 'server_error',
  timeout_error: 'timeout',
  invalid_request_error: 'bad_request',
  request_too_large: 'context_too_long',
  authentication_error: 'auth',
  permission_error: 'auth',
  not_found_error: 'not_found',
  billing_error: 'quota_exhausted',
}

/**
 * `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`.
 * `overloaded_error` on a status other than 529 is a heuristic (as in
 * Anthropic's SDK): it applies only when `x-should-retry` is absent, so the
 * header keeps the last word. Mid-stream there are no headers and it applies.
 */
function readAnthropicError(json: unknown): BodyVerdict | undefined {
  const error = getRecord(json, 'error')
  if (error === undefined) return undefined
  const type = getString(error, 'type')
  const message = getString(error, 'message')
  if (type === 'overloaded_error') {
    return { providerCode: type, message, heuristicKind: 'overloaded' }
  }
  let kind = lookup(ANTHROPIC_TYPES, type)
  if (kind === 'bad_request') kind = kindInMessage(message) ?? kind
  return { providerCode: type, message, kind }
}

/**
 * `invalid_request_error` (a 400) covers more than bad requests; the message
 * tells them apart. An over-long prompt is the context window. The others
 * refuse the account, not the request: read as `bad_request`
 * (request-bound), each failed the whole call with `RequestRejectedError` —
 * no fallback, and the client told to fix a request that was fine. Verbatim:
 * "You have reached your specified API usage limits. You will regain access
 * on 2026-04-01 at 00:00 UTC." (the workspace spend limit:
 * anthropics/claude-code#38035, #2127), "This organization has been
 * disabled." (anthropics/claude-code#19028, #72457), "Your credit balance is
 * too low to access the Anthropic API".
 */
function kindInMessage(message: string | undefined): ErrorKind | undefined {
  const m = message?.slice(0, 500).toLowerCase() ?? ''
  if (m.includes('prompt is too long')) return 'context_too_long'
  if (m.includes('credit balance is too low')) return 'quota_exhausted'
  if (m.includes('reached your specified api usage limits')) return 'quota_exhausted'
  if (m.includes('organization has been disabled')) return 'auth'
  return undefined
}

export function normalizeAnthropicError(input: ErrorInput): NormalizedError | undefined {
  return classifyError(input, readAnthropicError)
}

/** `event: error` frames, e.g. an `overloaded_error` after the 200 and some text. */
export function normalizeAnthropicStreamError(
  frame: StreamErrorInput,
): NormalizedError | undefined {
  return classifyStreamError(frame, readAnthropicError)
}
