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
  // 413: the HTTP body over the Messages API's 32 MB, refused by Cloudflare
  // before the API reads it (docs.claude.com/en/api/errors) — not the
  // context window: 32 MB of base64 images or PDFs is far fewer tokens than
  // the window takes, and another provider's limit may take the body. As
  // `request_too_large` it goes to the next model; refused by every one,
  // the recovery steps make it smaller.
  request_too_large: 'request_too_large',
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
  if (kind === 'rate_limited' && isSpendCap(error, message)) {
    return { providerCode: type, message, kind: 'quota_exhausted', noWaitLifts: true }
  }
  return { providerCode: type, message, kind }
}

/**
 * The organisation's monthly spend cap, set by its usage tier, answers 429
 * `rate_limit_error` — but no wait within the month lifts it: no
 * `retry-after`, `error.details.error_code: "enforced_spend_limit_reached"`,
 * "You have reached your API usage limits: your organization has crossed
 * its monthly API usage threshold … You will regain access on 2026-09-01 at
 * 00:00 UTC." (docs.claude.com/en/api/rate-limits: retries fail until access
 * resumes). Read as a rate limit it was retried, and the key cooled with a
 * growing back-off, again and again for the rest of the month; it is the
 * account's quota, as the workspace limit's 400 is (`kindInMessage`).
 *
 * The API answers it today in other words, with no code at all, a
 * `retry-after` minutes long and `x-should-retry: true`: "This request would
 * exceed your account's monthly spend limit. Please try again later."
 * (earendil-works/pi#9849, can1357/oh-my-pi#5418). Read as a rate limit,
 * callModel tried it `maxAttempts` times and cooled the key for the
 * `retry-after`, then asked again, all month; a gateway's client was told
 * `rate_limit_exceeded`, retry after 60 s. Either way the wait the 429
 * carries is not the cap's (`noWaitLifts`): the key is retired, as for the
 * coded answer.
 */
function isSpendCap(error: Record<string, unknown>, message: string | undefined): boolean {
  if (getString(getRecord(error, 'details'), 'error_code') === 'enforced_spend_limit_reached') {
    return true
  }
  const m = message?.slice(0, 500).toLowerCase() ?? ''
  return m.includes('reached your api usage limits') || m.includes('monthly spend limit')
}

/**
 * `invalid_request_error` (a 400) covers more than bad requests; the message
 * tells them apart. An over-long prompt is the context window, and so is one
 * that leaves no room for `max_tokens`. The others
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
  // Anthropic's output filter stopped the answer (text that reproduces
  // protected material: lyrics, licences, long quotations) — over HTTP 400
  // or as a stream's `error` event after some text (verbatim in
  // anthropics/claude-code#6195, #18542, #55789, #58367). The model's
  // output was refused, not the request's form: as `bad_request` the
  // caller (and a gateway's client, `invalid_request`) was told to fix a
  // request nothing was wrong with, and a client checking for a content
  // refusal (`content_policy`, OpenAI's `content_policy_violation`) never saw one.
  if (m.includes('output blocked by content filtering policy')) return 'content_policy'
  // The prompt fits, but not with the `max_tokens` asked for: "input length
  // and `max_tokens` exceed context limit: 178959 + 64000 > 200000, decrease
  // input length or `max_tokens` and try again" (docker/docker-agent#569,
  // anthropics/claude-code#228). A smaller request gets past it, as past
  // "prompt is too long": read as `bad_request`, no recovery step ran.
  if (m.includes('exceed context limit')) return 'context_too_long'
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
