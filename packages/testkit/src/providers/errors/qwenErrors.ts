import type { ErrorReply, TextReply } from '../types.js'

/** DashScope's throttling codes and their documented messages. */
export const QWEN_THROTTLING_MESSAGES = {
  Throttling: 'Requests throttling triggered.',
  'Throttling.RateQuota': 'Requests rate limit exceeded, please try again later.',
  'Throttling.AllocationQuota': 'Allocated quota exceeded, please increase your quota limit.',
  'Throttling.AllocationQuota.FreeTierOnly': 'The free tier of the model has been exhausted.',
} as const

export type QwenThrottlingCode = keyof typeof QWEN_THROTTLING_MESSAGES

const nativeBody = (code: string, message: string) => ({
  code,
  message,
  request_id: 'b0a0d2c4-fake-9c1e-hourglass',
})

/** Qwen / Alibaba DashScope error shapes, including the ones hidden behind HTTP 200. */
export const qwenErrors = {
  /** HTTP 200 whose body is a DashScope error (`{"code":"Throttling.RateQuota",…}`): not a success. */
  throttlingIn200(code: QwenThrottlingCode = 'Throttling.RateQuota'): ErrorReply {
    return {
      kind: 'error',
      status: 200,
      body: nativeBody(code, QWEN_THROTTLING_MESSAGES[code]),
      headers: {},
    }
  },
  /** HTTP 429 with the native DashScope body. */
  throttling(code: QwenThrottlingCode = 'Throttling.RateQuota'): ErrorReply {
    return {
      kind: 'error',
      status: 429,
      body: nativeBody(code, QWEN_THROTTLING_MESSAGES[code]),
      headers: {},
    }
  },
  /** HTTP 429 in compatible mode (`/compatible-mode/v1`): OpenAI's shape with DashScope's codes. */
  compatibleRateLimited(): ErrorReply {
    return {
      kind: 'error',
      status: 429,
      body: {
        error: {
          message: 'Requests rate limit exceeded, please try again later.',
          type: 'limit_requests',
          param: null,
          code: 'limit_requests',
        },
        request_id: 'b0a0d2c4-fake-9c1e-hourglass',
      },
      headers: {},
    }
  },
  /** 400 `DataInspectionFailed`: the content filter; never retried. */
  dataInspectionFailed(): ErrorReply {
    return {
      kind: 'error',
      status: 400,
      body: nativeBody('DataInspectionFailed', 'Input data may contain inappropriate content.'),
      headers: {},
    }
  },
  /** A 200 stream that sends some tokens, then `event:error` / `:HTTP_STATUS/429` with a throttling code. */
  throttlingInStream(
    options: { afterTokens?: number; code?: QwenThrottlingCode; text?: string } = {},
  ): TextReply {
    const code = options.code ?? 'Throttling.RateQuota'
    return {
      kind: 'text',
      text: options.text ?? '通义千问的回答会被限流打断',
      streamError: {
        afterTokens: options.afterTokens ?? 0,
        body: nativeBody(code, QWEN_THROTTLING_MESSAGES[code]),
        status: 429,
      },
    }
  },
}
