import type { ErrorReply } from '../types.js'

/**
 * No `x-ds-trace-id` here: the fake adds one to each answer it writes
 * (writeReply's `requestIdHeader`), new every time — one minted with the
 * body was repeated by every answer of a reply given twice.
 */
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
  /**
   * 400 for a prompt over the context window: no `context_length_exceeded`
   * code, OpenAI's words under DeepSeek's generic one (verbatim in
   * FoundationAgents/OpenManus#79, BerriAI/litellm#10431).
   */
  contextTooLong(): ErrorReply {
    return error(
      400,
      "This model's maximum context length is 131072 tokens. However, you requested 139867 tokens (131675 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.",
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
