import { refuseUnknownOptions } from '@hourglass/core'
import type { ErrorReply, TextReply } from '../types.js'
import { checkedReply } from './checkedReply.js'
import { refuseUnknown } from './refuseUnknown.js'

/** DashScope's throttling codes and their documented messages. */
export const QWEN_THROTTLING_MESSAGES = {
  Throttling: 'Requests throttling triggered.',
  'Throttling.RateQuota': 'Requests rate limit exceeded, please try again later.',
  'Throttling.AllocationQuota': 'Allocated quota exceeded, please increase your quota limit.',
} as const

export type QwenThrottlingCode = keyof typeof QWEN_THROTTLING_MESSAGES

/** The 403s that refuse one model to the key, with Model Studio's words. */
const MODEL_ACCESS_MESSAGES = {
  'AccessDenied.Unpurchased':
    'Access to model denied. Please make sure you are eligible for using the model.',
  AccessDenied: 'Access denied.',
  'Model.AccessDenied': 'Model access denied.',
} as const

const nativeBody = (code: string, message: string) => ({
  code,
  message,
  request_id: 'b0a0d2c4-fake-9c1e-hourglass',
})

/** Qwen / Alibaba DashScope error shapes, including the ones hidden behind HTTP 200. */
export const qwenErrors = {
  /**
   * HTTP 200 whose body is a DashScope error (`{"code":"Throttling.RateQuota",…}`): not a success.
   * Provenance unverified: DashScope documents throttling as HTTP 429, and its
   * own SDK's non-streamed 200 path reads only `output` / `usage` /
   * `request_id` (dashscope/dashscope-sdk-python `api_entities/http_request.py`).
   * Kept as a robustness case for clients, not as a documented reply.
   */
  throttlingIn200(code: QwenThrottlingCode = 'Throttling.RateQuota'): ErrorReply {
    refuseUnknown('qwenErrors.throttlingIn200()', 'code', QWEN_THROTTLING_MESSAGES, code)
    return {
      kind: 'error',
      status: 200,
      body: nativeBody(code, QWEN_THROTTLING_MESSAGES[code]),
      headers: {},
    }
  },
  /** HTTP 429 with the native DashScope body. */
  throttling(code: QwenThrottlingCode = 'Throttling.RateQuota'): ErrorReply {
    // Indexed as it came, an unknown code answered a body with no message.
    refuseUnknown('qwenErrors.throttling()', 'code', QWEN_THROTTLING_MESSAGES, code)
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
  /**
   * HTTP 429 in compatible mode for the per-minute *token* throttle
   * (`Throttling.AllocationQuota` natively): DashScope spells it with OpenAI's
   * billing words and code, `insufficient_quota`, though it clears within the
   * minute and the body links the `error-code#token-limit` doc. Reported
   * verbatim in github.com/can1357/oh-my-pi/issues/8496 (and PRs #8476,
   * #8498) and github.com/openclaw/openclaw/pull/148275: "You exceeded your
   * current quota, please check your plan and billing details. For details,
   * see: https://help.aliyun.com/zh/model-studio/error-code#token-limit
   * (type=insufficient_quota param=insufficient_quota)". Transient, unlike
   * OpenAI's `insufficient_quota`.
   */
  compatibleTokenLimited(): ErrorReply {
    return {
      kind: 'error',
      status: 429,
      body: {
        error: {
          message:
            'You exceeded your current quota, please check your plan and billing details. For details, see: https://help.aliyun.com/zh/model-studio/error-code#token-limit',
          type: 'insufficient_quota',
          param: null,
          code: 'insufficient_quota',
        },
        request_id: 'b0a0d2c4-fake-9c1e-hourglass',
      },
      headers: {},
    }
  },
  /**
   * HTTP 403 in compatible mode when "use free tier only" is on and the
   * model's free quota is spent: not a throttle (it does not clear by
   * itself), `AllocationQuota.FreeTierOnly` — the code DashScope sends, as
   * quoted in real error reports.
   */
  freeTierExhausted(): ErrorReply {
    return {
      kind: 'error',
      status: 403,
      body: {
        error: {
          message:
            'The free tier of the model has been exhausted. If you wish to continue access the model on a paid basis, please disable the "use free tier only" mode in the management console.',
          type: 'AllocationQuota.FreeTierOnly',
          param: null,
          code: 'AllocationQuota.FreeTierOnly',
        },
        id: 'chatcmpl-9ad5f6e5-fake-905a-hourglass',
        request_id: '9ad5f6e5-fake-905a-hourglass',
      },
      headers: {},
    }
  },
  /**
   * HTTP 403 in compatible mode when the account may not call this model:
   * `AccessDenied.Unpurchased` (default), "Access to model denied. Please
   * make sure you are eligible for using the model." — the model not
   * purchased —, `AccessDenied`, "Access denied." — e.g. a model in an
   * invitation-only test —, or `Model.AccessDenied`, "Model access denied."
   * — the key's (sub-)workspace not granted this model (Model Studio's
   * status codes). The same key still serves the account's (the
   * workspace's) other models.
   */
  modelAccessDenied(
    code:
      | 'AccessDenied.Unpurchased'
      | 'AccessDenied'
      | 'Model.AccessDenied' = 'AccessDenied.Unpurchased',
  ): ErrorReply {
    refuseUnknown('qwenErrors.modelAccessDenied', 'code', MODEL_ACCESS_MESSAGES, code)
    return {
      kind: 'error',
      status: 403,
      body: {
        error: {
          message: MODEL_ACCESS_MESSAGES[code],
          type: code,
          param: null,
          code,
        },
        request_id: 'b0a0d2c4-fake-9c1e-hourglass',
      },
      headers: {},
    }
  },
  /**
   * HTTP 400 in compatible mode for the content filter: OpenAI's shape with
   * DashScope's lower-case code, e.g. `{"error":{"code":"data_inspection_failed",
   * "param":null,"message":"Input data may contain inappropriate content.",
   * "type":"data_inspection_failed"},"id":"chatcmpl-…","request_id":"…"}`.
   */
  compatibleDataInspectionFailed(): ErrorReply {
    return {
      kind: 'error',
      status: 400,
      body: {
        error: {
          code: 'data_inspection_failed',
          param: null,
          message: 'Input data may contain inappropriate content.',
          type: 'data_inspection_failed',
        },
        id: 'chatcmpl-fakehourglass',
        request_id: 'b0a0d2c4-fake-9c1e-hourglass',
      },
      headers: {},
    }
  },
  /** 400 `DataInspectionFailed`: the content filter in the native DashScope shape; never retried. */
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
    // Ignored, a misspelled option scripted the default instead.
    refuseUnknownOptions(
      options,
      ['afterTokens', 'code', 'text'],
      'qwenErrors.throttlingInStream()',
    )
    const code = options.code ?? 'Throttling.RateQuota'
    refuseUnknown('qwenErrors.throttlingInStream()', 'code', QWEN_THROTTLING_MESSAGES, code)
    return checkedReply<TextReply>('qwenErrors.throttlingInStream()', {
      kind: 'text',
      text: options.text ?? '通义千问的回答会被限流打断',
      streamError: {
        afterTokens: options.afterTokens ?? 0,
        body: nativeBody(code, QWEN_THROTTLING_MESSAGES[code]),
        status: 429,
      },
    })
  },
}
