import { refuseUnknownOptions } from '@hourglass/core'
import type { ErrorReply, TextReply } from '../types.js'
import { checkedReply, shouldRetryHeader } from './checkedReply.js'
import { MAX_WAIT_S, refuseBadWait } from './refuseBadWait.js'
import { refuseUnknown } from './refuseUnknown.js'
import { RESET_AFTER_S, rfc3339Reset } from './resetAfterS.js'

/**
 * The error types whose body names no `details` at all: a rejected key
 * (`{"type":"error","error":{"type":"authentication_error","message":"invalid
 * x-api-key"},"request_id":"req_011C…"}`, live 401s captured in 2026), and a
 * body over the byte limit, refused before it is read. Every other error the
 * Messages API answers today carries `"details": null` ahead of its type —
 * `invalid_request_error` ("Output blocked by content filtering policy", "Your
 * credit balance is too low…", "context reduction is suggested", each with a
 * real `req_011C…` id), `rate_limit_error`, `api_error` ("Internal server
 * error"), `overloaded_error` — over HTTP and in a stream's `error` event
 * alike. A client that reads `error.details` as an object (the spend cap's
 * `{"error_code": …}`) meets a `null` there against the real API.
 */
const WITHOUT_DETAILS: ReadonlySet<string> = new Set(['authentication_error', 'request_too_large'])

const body = (type: string, message: string) => ({
  type: 'error',
  error: WITHOUT_DETAILS.has(type) ? { type, message } : { details: null, type, message },
  request_id: 'req_011CFakeHourglass',
})

/** The output filter's words, as Anthropic sends them over HTTP and in a stream. */
const OUTPUT_BLOCKED = 'Output blocked by content filtering policy'

/**
 * An overload, as Anthropic sends it today, over HTTP (529) and as a stream's
 * `error` event alike: `error.details` is there and `null` —
 * `{"type":"error","error":{"details":null,"type":"overloaded_error",
 * "message":"Overloaded"},"request_id":"req_011C…"}` (anthropic-sdk-go's
 * "received error while streaming: …" quoting a real in-stream overload;
 * vercel/ai's @ai-sdk/anthropic 529 fixture).
 */
const overloadedBody = () => body('overloaded_error', 'Overloaded')

const error = (
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): ErrorReply => ({
  kind: 'error',
  status,
  body: body(type, message),
  headers: { 'request-id': 'req_011CFakeHourglass', ...headers },
})

/**
 * Tier 1's limits (docs.claude.com/en/api/rate-limits) and what a 429 of
 * another limit leaves of each; `header` is the `anthropic-ratelimit-*` name.
 */
const RATE_LIMITS = {
  requests: { header: 'requests', limit: 50, roomLeft: 31, words: '50 requests' },
  input_tokens: {
    header: 'input-tokens',
    limit: 30_000,
    roomLeft: 27_000,
    words: '30,000 input tokens',
  },
  output_tokens: {
    header: 'output-tokens',
    limit: 8_000,
    roomLeft: 8_000,
    words: '8,000 output tokens',
  },
} as const

/** Anthropic's documented error bodies (`{"type":"error","error":{…}}`) and headers. */
export const anthropicErrors = {
  /** 529 `overloaded_error`; `shouldRetry` adds `x-should-retry`. */
  overloaded(options: { shouldRetry?: boolean } = {}): ErrorReply {
    // Ignored, a misspelled option scripted the default instead.
    refuseUnknownOptions(options, ['shouldRetry'], 'anthropicErrors.overloaded()')
    return {
      ...error(
        529,
        'overloaded_error',
        'Overloaded',
        shouldRetryHeader('anthropicErrors.overloaded()', options.shouldRetry),
      ),
      body: overloadedBody(),
    }
  },
  /**
   * 429 `rate_limit_error` for one spent limit, in Anthropic's words and
   * headers (docs.claude.com/en/api/rate-limits), at Tier 1's sizes: 50
   * requests, 30,000 input and 8,000 output tokens a minute. `limit`:
   * `requests` (the default), `input_tokens` or `output_tokens`. Like a real
   * 429 it carries `retry-after` (s) and every `anthropic-ratelimit-*`
   * header: the spent limit's `remaining` is 0 and it resets after
   * `retryAfterS`; the others have room (token counts in whole thousands,
   * as Anthropic rounds them). `anthropic-ratelimit-tokens-*` is the most
   * restrictive token limit. The message is the one each limit answers:
   * "This request would exceed your organization's rate limit of 50
   * requests per minute (org: …, model: …)…", "… of 30,000 input tokens per
   * minute …".
   */
  rateLimited(
    options: { retryAfterS?: number; limit?: 'requests' | 'input_tokens' | 'output_tokens' } = {},
  ): ErrorReply {
    // Ignored, a misspelled option scripted the default instead.
    refuseUnknownOptions(options, ['retryAfterS', 'limit'], 'anthropicErrors.rateLimited()')
    refuseBadWait('anthropicErrors.rateLimited()', 'retryAfterS', options.retryAfterS, MAX_WAIT_S)
    const retryAfterS = options.retryAfterS ?? 1
    const limit = options.limit ?? 'requests'
    refuseUnknown('anthropicErrors.rateLimited()', 'limit', RATE_LIMITS, limit)
    // Stamped again from the fake's clock when the reply is sent (RESET_AFTER_S);
    // the system clock's time here serves a reply used outside a fake.
    const reset = rfc3339Reset(Date.now(), retryAfterS)
    const spent = RATE_LIMITS[limit]
    const headers: Record<string, string> = { 'retry-after': String(retryAfterS) }
    for (const each of Object.values(RATE_LIMITS)) {
      headers[`anthropic-ratelimit-${each.header}-limit`] = String(each.limit)
      headers[`anthropic-ratelimit-${each.header}-remaining`] =
        each === spent ? '0' : String(each.roomLeft)
      headers[`anthropic-ratelimit-${each.header}-reset`] = reset
    }
    // The most restrictive token limit: the spent one, else input's.
    const tokens = limit === 'requests' ? RATE_LIMITS.input_tokens : spent
    headers['anthropic-ratelimit-tokens-limit'] = String(tokens.limit)
    headers['anthropic-ratelimit-tokens-remaining'] =
      limit === 'requests' ? String(tokens.roomLeft) : '0'
    headers['anthropic-ratelimit-tokens-reset'] = reset
    const advice =
      limit === 'requests'
        ? 'Try again later.'
        : 'Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://claude.com/contact-sales to discuss your options for a rate limit increase.'
    return Object.assign(
      error(
        429,
        'rate_limit_error',
        `This request would exceed your organization's rate limit of ${spent.words} per minute (org: 00000000-0000-4000-8000-fakehourglass, model: claude-sonnet-4-5). For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. ${advice}`,
        headers,
      ),
      { [RESET_AFTER_S]: retryAfterS },
    )
  },
  /**
   * 429 `rate_limit_error` for the organisation's monthly spend cap, set by
   * its usage tier: no `retry-after`, the message names the day access
   * resumes, and `error.details.error_code` is `enforced_spend_limit_reached`
   * (docs.claude.com/en/api/rate-limits: API usage pauses until the first of
   * the next month, 00:00 UTC; retries fail until then).
   */
  spendCapReached(regainAccess = '2026-09-01 at 00:00 UTC'): ErrorReply {
    return {
      kind: 'error',
      status: 429,
      body: {
        type: 'error',
        error: {
          type: 'rate_limit_error',
          message: `You have reached your API usage limits: your organization has crossed its monthly API usage threshold, set based on your organization's API tier. You will regain access on ${regainAccess}.`,
          details: { error_code: 'enforced_spend_limit_reached' },
        },
        request_id: 'req_011CFakeHourglass',
      },
      headers: { 'request-id': 'req_011CFakeHourglass' },
    }
  },
  /**
   * 429 `rate_limit_error` for the account's monthly spend limit in the words
   * the API answers it with today — "This request would exceed your
   * account's monthly spend limit. Please try again later." (verbatim, with
   * its `req_011C…` id, in earendil-works/pi#9849, can1357/oh-my-pi#5418,
   * NousResearch/hermes-agent#91091), `details: null` as every
   * `rate_limit_error` — and, unlike `spendCapReached()`, no error code, a
   * `retry-after` minutes long (`retryAfterS`, default 600: the clients in
   * those reports waited it, capped at 600 s, retry after retry) and
   * `x-should-retry: true`, as the captured Anthropic 429s carry it
   * (anthropics/anthropic-sdk-typescript#357, brainlid/langchain#302). Only
   * the message tells it from a rate limit: no wait within the month lifts it.
   */
  monthlySpendLimit(options: { retryAfterS?: number } = {}): ErrorReply {
    // Ignored, a misspelled option scripted the default instead.
    refuseUnknownOptions(options, ['retryAfterS'], 'anthropicErrors.monthlySpendLimit()')
    refuseBadWait(
      'anthropicErrors.monthlySpendLimit()',
      'retryAfterS',
      options.retryAfterS,
      MAX_WAIT_S,
    )
    return error(
      429,
      'rate_limit_error',
      "This request would exceed your account's monthly spend limit. Please try again later.",
      { 'retry-after': String(options.retryAfterS ?? 600), 'x-should-retry': 'true' },
    )
  },
  invalidRequest(message = 'messages: at least one message is required'): ErrorReply {
    return error(400, 'invalid_request_error', message)
  },
  promptTooLong(): ErrorReply {
    return error(400, 'invalid_request_error', 'prompt is too long: 215234 tokens > 200000 maximum')
  },
  /**
   * 400 for a prompt that fits but leaves no room for the `max_tokens` asked
   * for (verbatim in docker/docker-agent#569, anthropics/claude-code#228).
   */
  contextLimitWithMaxTokens(): ErrorReply {
    return error(
      400,
      'invalid_request_error',
      'input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000, decrease input length or `max_tokens` and try again',
    )
  },
  /**
   * 413 `request_too_large`: the body is over the Messages API's byte limit
   * (docs.anthropic.com/en/api/errors: "413 - request_too_large: Request
   * exceeds the maximum allowed number of bytes").
   */
  requestTooLarge(): ErrorReply {
    return error(413, 'request_too_large', 'Request exceeds the maximum allowed number of bytes.')
  },
  authentication(): ErrorReply {
    return error(401, 'authentication_error', 'invalid x-api-key')
  },
  /**
   * 400 `invalid_request_error` for the workspace's spend limit: the account
   * is refused, not the request, until the date it names (verbatim in
   * anthropics/claude-code#38035 and #2127).
   */
  usageLimitReached(regainAccess = '2026-04-01 at 00:00 UTC'): ErrorReply {
    return error(
      400,
      'invalid_request_error',
      `You have reached your specified API usage limits. You will regain access on ${regainAccess}.`,
    )
  },
  /** 400 `invalid_request_error` "This organization has been disabled." (anthropics/claude-code#19028). */
  organizationDisabled(): ErrorReply {
    return error(400, 'invalid_request_error', 'This organization has been disabled.')
  },
  apiError(): ErrorReply {
    return error(500, 'api_error', 'Internal server error')
  },
  /**
   * 400 `invalid_request_error` "Output blocked by content filtering
   * policy": Anthropic's output filter refused what the model was writing
   * (protected material: lyrics, a licence's text), not the request's form
   * (verbatim in anthropics/claude-code#18542 and #58367; `details: null`
   * as every `invalid_request_error` today). `outputBlockedInStream` is the
   * same refusal after some text.
   */
  outputBlocked(): ErrorReply {
    return error(400, 'invalid_request_error', OUTPUT_BLOCKED)
  },
  /**
   * A 200 stream that sends `afterTokens` tokens of `text`, then `event:
   * error` with the output filter's `invalid_request_error` (as
   * anthropics/claude-code#55789 and #58367 quote it from a stream: no
   * status, `"details":null`).
   */
  outputBlockedInStream(options: { afterTokens?: number; text?: string } = {}): TextReply {
    // Ignored, a misspelled option scripted the default instead.
    refuseUnknownOptions(
      options,
      ['afterTokens', 'text'],
      'anthropicErrors.outputBlockedInStream()',
    )
    return checkedReply<TextReply>('anthropicErrors.outputBlockedInStream()', {
      kind: 'text',
      text: options.text ?? 'Here are the lyrics you asked for',
      streamError: {
        afterTokens: options.afterTokens ?? 0,
        body: body('invalid_request_error', OUTPUT_BLOCKED),
        status: 400,
      },
    })
  },
  /** A 200 stream that sends `afterTokens` tokens of `text`, then `event: error` with `overloaded_error`. */
  overloadedInStream(options: { afterTokens?: number; text?: string } = {}): TextReply {
    // Ignored, a misspelled option scripted the default instead.
    refuseUnknownOptions(options, ['afterTokens', 'text'], 'anthropicErrors.overloadedInStream()')
    return checkedReply<TextReply>('anthropicErrors.overloadedInStream()', {
      kind: 'text',
      text: options.text ?? 'This answer will be cut by an overload',
      streamError: {
        afterTokens: options.afterTokens ?? 0,
        body: overloadedBody(),
        status: 529,
      },
    })
  },
}
