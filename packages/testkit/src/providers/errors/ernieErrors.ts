import type { ErrorReply } from '../types.js'

/** Baidu ERNIE (Qianfan legacy API) rate-limit codes, sent inside HTTP 200 bodies. */
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

export const ernieErrors = {
  /** HTTP 200 with `{"error_code":336501,"error_msg":"Rate limit reached for RPM"}` (or tpm/qps/daily). */
  rateLimited(which: keyof typeof ERNIE_ERROR_CODES = 'rpm'): ErrorReply {
    return {
      kind: 'error',
      status: 200,
      body: { ...ERNIE_ERROR_CODES[which], id: 'as-fakehourglass' },
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
