import { refuseUnknownOptions } from '@hourglass/core'
import type { ErrorReply } from '../types.js'
import { checkedReply, shouldRetryHeader } from './checkedReply.js'
import { MAX_WAIT_S, refuseBadWait } from './refuseBadWait.js'
import { refuseUnknown } from './refuseUnknown.js'

const error = (status: number, body: object, headers: Record<string, string> = {}): ErrorReply => ({
  kind: 'error',
  status,
  body: { error: { param: null, ...body } },
  headers: { 'x-request-id': `req_fake${status}`, ...headers },
})

/** OpenAI's documented error bodies and headers. */
export const openAIErrors = {
  /**
   * 429 `rate_limit_exceeded` on the request limit (default) or the token
   * limit (`limit: 'tokens'`). Always with `retry-after` (whole seconds:
   * `retryAfterS`, else `retryAfterMs` rounded up, else 1), `retry-after-ms`
   * when `retryAfterMs` is given, and both `x-ratelimit-*` sets, as OpenAI
   * sends them on every answer: the spent limit's `remaining` is 0 and its
   * reset — like the message's "Please try again in …" — names the wait; the
   * other limit has room.
   */
  rateLimited(
    options: { retryAfterS?: number; retryAfterMs?: number; limit?: 'requests' | 'tokens' } = {},
  ): ErrorReply {
    // Ignored, a misspelled option scripted the default instead.
    refuseUnknownOptions(
      options,
      ['retryAfterS', 'retryAfterMs', 'limit'],
      'openAIErrors.rateLimited()',
    )
    if (options.limit !== undefined) {
      refuseUnknown('openAIErrors.rateLimited()', 'limit', ['requests', 'tokens'], options.limit)
    }
    refuseBadWait('openAIErrors.rateLimited()', 'retryAfterS', options.retryAfterS, MAX_WAIT_S)
    refuseBadWait(
      'openAIErrors.rateLimited()',
      'retryAfterMs',
      options.retryAfterMs,
      MAX_WAIT_S * 1000,
    )
    // One wait named everywhere: `retry-after-ms` alone sets the reset too
    // (a reset of 1 s beside `retry-after-ms: 200` described two limits).
    const waitS =
      options.retryAfterS ?? (options.retryAfterMs === undefined ? 1 : options.retryAfterMs / 1000)
    const reset = goDuration(waitS)
    // OpenAI's 429 names the limit twice: `type` and the message's "on
    // requests per min (RPM)" / "on tokens per min (TPM)"; the headers say
    // which count is spent. The message's wait is the header's: OpenAI
    // names one wait, and a fake whose two disagreed tested neither.
    const tokens = options.limit === 'tokens'
    // Both sets, always: a real answer carries all six headers, the limit
    // not spent with room left (here: one request's worth, 1 of 500 and
    // 512 of 200,000 tokens, which refill in 120 ms and 154 ms).
    const headers: Record<string, string> = {
      'retry-after': String(options.retryAfterS ?? Math.max(0, Math.ceil(waitS))),
      'x-ratelimit-limit-requests': '500',
      'x-ratelimit-remaining-requests': tokens ? '499' : '0',
      'x-ratelimit-reset-requests': tokens ? '120ms' : reset,
      'x-ratelimit-limit-tokens': '200000',
      'x-ratelimit-remaining-tokens': tokens ? '0' : '199488',
      'x-ratelimit-reset-tokens': tokens ? reset : '154ms',
    }
    if (options.retryAfterMs !== undefined) headers['retry-after-ms'] = String(options.retryAfterMs)
    return error(
      429,
      {
        message: tokens
          ? `Rate limit reached for gpt-4o-mini in organization org-fake on tokens per min (TPM): Limit 200000, Used 200000, Requested 512. Please try again in ${reset}.`
          : `Rate limit reached for gpt-4o-mini in organization org-fake on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in ${reset}.`,
        type: tokens ? 'tokens' : 'requests',
        code: 'rate_limit_exceeded',
      },
      headers,
    )
  },
  /** 429 `insufficient_quota`: a permanent 429 — retrying cannot help. */
  insufficientQuota(): ErrorReply {
    return error(429, {
      message:
        'You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.',
      type: 'insufficient_quota',
      code: 'insufficient_quota',
    })
  },
  badRequest(message = "Invalid value for 'messages': expected an array."): ErrorReply {
    return error(400, { message, type: 'invalid_request_error', code: null })
  },
  contentPolicy(): ErrorReply {
    return error(400, {
      message:
        'Your request was rejected as a result of our safety system. Your prompt may contain text that is not allowed by our safety system.',
      type: 'invalid_request_error',
      code: 'content_policy_violation',
    })
  },
  /** 400 `context_length_exceeded`; OpenAI names the field at fault, `param: "messages"`. */
  contextTooLong(): ErrorReply {
    return error(400, {
      param: 'messages',
      message:
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
      type: 'invalid_request_error',
      code: 'context_length_exceeded',
    })
  },
  authentication(): ErrorReply {
    return error(401, {
      message:
        'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.',
      type: 'invalid_request_error',
      code: 'invalid_api_key',
    })
  },
  modelNotFound(model = 'gpt-5-nonexistent'): ErrorReply {
    return error(404, {
      message: `The model \`${model}\` does not exist or you do not have access to it.`,
      type: 'invalid_request_error',
      code: 'model_not_found',
    })
  },
  /** 500 (or `status`), optionally with `x-should-retry`, which overrides the status for clients. */
  serverError(options: { status?: number; shouldRetry?: boolean } = {}): ErrorReply {
    // Ignored, a misspelled option scripted the default instead.
    refuseUnknownOptions(options, ['status', 'shouldRetry'], 'openAIErrors.serverError()')
    const where = 'openAIErrors.serverError()'
    const headers = shouldRetryHeader(where, options.shouldRetry)
    return checkedReply(
      where,
      error(
        options.status ?? 500,
        {
          message: 'The server had an error while processing your request. Sorry about that!',
          type: 'server_error',
          code: null,
        },
        headers,
      ),
    )
  },
}

/**
 * Seconds as Go's `time.Duration` prints them, which is how OpenAI writes
 * its `x-ratelimit-reset-*` headers: `1s`, `1m30s`, `6m0s`, `1h0m0s` —
 * never `90s` (platform.openai.com/docs/guides/rate-limits, headers table).
 */
function goDuration(seconds: number): string {
  // Whole milliseconds first: 119.9999 s is `2m0s`, not `1m60s` (59.9999 s
  // rounded to `60s` after the minutes were counted).
  const total = Number.isFinite(seconds) && seconds > 0 ? Math.round(seconds * 1000) / 1000 : 0
  if (total > 0 && total < 1) return `${Number((total * 1000).toFixed(3))}ms`
  const h = Math.floor(total / 3600)
  const m = Math.floor((total % 3600) / 60)
  const s = `${Number((total % 60).toFixed(3))}s`
  if (h > 0) return `${h}h${m}m${s}`
  return m > 0 ? `${m}m${s}` : s
}
