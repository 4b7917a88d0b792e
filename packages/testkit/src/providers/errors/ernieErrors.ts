import type { ErrorReply } from '../types.js'
import { refuseUnknown } from './refuseUnknown.js'

/** Baidu ERNIE (Qianfan legacy v1 API) rate-limit codes, sent inside HTTP 200 bodies. */
export const ERNIE_ERROR_CODES = {
  /** Requests per minute (retryable). */
  rpm: { error_code: 336501, error_msg: 'Rate limit reached for RPM' },
  /** Tokens per minute (retryable). */
  tpm: { error_code: 336502, error_msg: 'Rate limit reached for TPM' },
  /** Legacy QPS limit (retryable). */
  qps: { error_code: 18, error_msg: 'Open api qps request limit reached' },
  /** Daily request limit: permanent for the day. */
  daily: { error_code: 17, error_msg: 'Open api daily request limit reached' },
} as const

/**
 * Qianfan v2 (`/v2/chat/completions`, OpenAI-compatible) rate-limit codes. v2
 * answers a limit with HTTP 429 and OpenAI's error shape plus an `id` — e.g.
 * `429 {"error":{"code":"rpm_rate_limit_exceeded","message":"Rate limit
 * reached for RPM","type":"rate_limit_exceeded"},"id":"as-wbx23eriqh"}`, as
 * reported verbatim in github.com/PaddlePaddle/ERNIE/issues/1031.
 */
export const ERNIE_V2_RATE_LIMITS = {
  rpm: { code: 'rpm_rate_limit_exceeded', message: 'Rate limit reached for RPM' },
  tpm: { code: 'tpm_rate_limit_exceeded', message: 'Rate limit reached for TPM' },
} as const

/**
 * Qianfan v2's refusals of the request's content and of the account, per its
 * error-code table (cloud.baidu.com/doc/qianfan-api/s/Om9b4yj3w): status,
 * `code`, `type` and message as listed there. The content review names the
 * field it judged, under `type: unsafe_request`; the account's bill and a
 * model taken offline come under `type: access_denied`, as a bad key's
 * permission does.
 */
export const ERNIE_V2_REFUSALS = {
  system_unsafe: {
    status: 403,
    type: 'unsafe_request',
    message: 'the content of system field is invalid',
  },
  user_setting_unsafe: {
    status: 403,
    type: 'unsafe_request',
    message: 'the content of user field is invalid',
  },
  functions_unsafe: {
    status: 403,
    type: 'unsafe_request',
    message: 'the content of functions field is invalid',
  },
  image_url_unsafe: {
    status: 400,
    type: 'unsafe_request',
    message: 'the content of image_url.url field is unsafe',
  },
  account_overdue: {
    status: 403,
    type: 'access_denied',
    message: 'Access denied due to overdue account',
  },
  model_offline: { status: 403, type: 'access_denied', message: 'The model is offline' },
} as const

export const ernieErrors = {
  /** HTTP 200 with `{"error_code":336501,"error_msg":"Rate limit reached for RPM"}` (or tpm/qps/daily). */
  rateLimited(which: keyof typeof ERNIE_ERROR_CODES = 'rpm'): ErrorReply {
    refuseUnknown('ernieErrors.rateLimited', 'which', ERNIE_ERROR_CODES, which)
    return {
      kind: 'error',
      status: 200,
      body: { ...ERNIE_ERROR_CODES[which], id: 'as-fakehourglass' },
      headers: {},
    }
  },
  /**
   * Qianfan v2 (the `ernie` dialect's `baseURL`, `/v2`): HTTP 429 with
   * `{"error":{"code":"rpm_rate_limit_exceeded","message":…,"type":"rate_limit_exceeded"},"id":"as-…"}`.
   * `rateLimited` is the legacy v1 (wenxinworkshop) spelling, sent with a 200.
   */
  v2RateLimited(which: keyof typeof ERNIE_V2_RATE_LIMITS = 'rpm'): ErrorReply {
    refuseUnknown('ernieErrors.v2RateLimited', 'which', ERNIE_V2_RATE_LIMITS, which)
    return {
      kind: 'error',
      status: 429,
      body: {
        error: { ...ERNIE_V2_RATE_LIMITS[which], type: 'rate_limit_exceeded' },
        id: 'as-fakehourglass',
      },
      headers: {},
    }
  },
  /**
   * Qianfan v2: a refusal of the content (`system_unsafe`, …: `type:
   * unsafe_request`) or of the account (`account_overdue`, `model_offline`:
   * `type: access_denied`), e.g. 403 `{"error":{"code":"system_unsafe",
   * "message":"the content of system field is invalid","type":
   * "unsafe_request"},"id":"as-…"}` (see `ERNIE_V2_REFUSALS`).
   */
  v2Refused(code: keyof typeof ERNIE_V2_REFUSALS = 'system_unsafe'): ErrorReply {
    refuseUnknown('ernieErrors.v2Refused', 'code', ERNIE_V2_REFUSALS, code)
    const { status, type, message } = ERNIE_V2_REFUSALS[code]
    return {
      kind: 'error',
      status,
      body: { error: { code, message, type }, id: 'as-fakehourglass' },
      headers: {},
    }
  },
  /** HTTP 200 with an invalid-token error (`error_code` 110). */
  invalidToken(): ErrorReply {
    return {
      kind: 'error',
      status: 200,
      body: { error_code: 110, error_msg: 'Access token invalid or no longer valid' },
      headers: {},
    }
  },
}
