import type { ErrorReply } from '../types.js'

const error = (status: number, message: string, type: string, code: string | null): ErrorReply => ({
  kind: 'error',
  status,
  body: { error: { message, type, param: null, code } },
  headers: {},
})

/** DeepSeek's status codes (docs: 400, 401, 402, 422, 429, 500, 503) in its OpenAI-style body. */
export const deepseekErrors = {
  /** 402 Insufficient Balance: permanent until someone tops up. */
  insufficientBalance(): ErrorReply {
    return error(402, 'Insufficient Balance', 'unknown_error', 'invalid_request_error')
  },
  /** 503 Server Overloaded. */
  serverOverloaded(): ErrorReply {
    return error(
      503,
      'Server overloaded, please try again later.',
      'server_overloaded',
      'server_overloaded',
    )
  },
  rateLimited(): ErrorReply {
    return error(429, 'Rate Limit Reached', 'rate_limit_reached', 'rate_limit_reached')
  },
  /**
   * 400 for `response_format: {type: "json_schema"}`: DeepSeek takes `text`
   * and `json_object` only (llm-exe/llm-exe#662, khoj-ai/khoj#1336).
   */
  responseFormatUnavailable(): ErrorReply {
    return error(
      400,
      'This response_format type is unavailable now',
      'invalid_request_error',
      'invalid_request_error',
    )
  },
  authentication(): ErrorReply {
    return error(
      401,
      'Authentication Fails, Your api key is invalid',
      'authentication_error',
      'invalid_request_error',
    )
  },
}
