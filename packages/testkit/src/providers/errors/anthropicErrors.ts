import type { ErrorReply, TextReply } from '../types.js'

const body = (type: string, message: string) => ({
  type: 'error',
  error: { type, message },
  request_id: 'req_011CFakeHourglass',
})

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

/** Anthropic's documented error bodies (`{"type":"error","error":{…}}`) and headers. */
export const anthropicErrors = {
  /** 529 `overloaded_error`; `shouldRetry` adds `x-should-retry`. */
  overloaded(options: { shouldRetry?: boolean } = {}): ErrorReply {
    return error(
      529,
      'overloaded_error',
      'Overloaded',
      options.shouldRetry === undefined ? {} : { 'x-should-retry': String(options.shouldRetry) },
    )
  },
  /** 429 `rate_limit_error` with `retry-after` (s) and `anthropic-ratelimit-requests-*` headers. */
  rateLimited(options: { retryAfterS?: number } = {}): ErrorReply {
    const retryAfterS = options.retryAfterS ?? 1
    return error(
      429,
      'rate_limit_error',
      'Number of request tokens has exceeded your per-minute rate limit (https://docs.anthropic.com/en/api/rate-limits); see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase.',
      {
        'retry-after': String(retryAfterS),
        'anthropic-ratelimit-requests-limit': '50',
        'anthropic-ratelimit-requests-remaining': '0',
        'anthropic-ratelimit-requests-reset': new Date(
          Date.now() + retryAfterS * 1000,
        ).toISOString(),
      },
    )
  },
  invalidRequest(message = 'messages: at least one message is required'): ErrorReply {
    return error(400, 'invalid_request_error', message)
  },
  promptTooLong(): ErrorReply {
    return error(400, 'invalid_request_error', 'prompt is too long: 215234 tokens > 200000 maximum')
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
  /** A 200 stream that sends `afterTokens` tokens of `text`, then `event: error` with `overloaded_error`. */
  overloadedInStream(options: { afterTokens?: number; text?: string } = {}): TextReply {
    return {
      kind: 'text',
      text: options.text ?? 'This answer will be cut by an overload',
      streamError: {
        afterTokens: options.afterTokens ?? 0,
        body: body('overloaded_error', 'Overloaded'),
        status: 529,
      },
    }
  },
}
