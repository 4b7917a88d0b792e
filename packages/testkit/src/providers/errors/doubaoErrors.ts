import type { ErrorReply } from '../types.js'

const error = (status: number, code: string, message: string, type: string): ErrorReply => ({
  kind: 'error',
  status,
  body: { error: { code, message, param: '', type } },
  headers: { 'x-request-id': '20250101000000FAKEHOURGLASS' },
})

/** Doubao / Volcengine Ark error bodies. */
export const doubaoErrors = {
  /** 429 `RateLimitExceeded.EndpointRPMExceeded` (or `…TPMExceeded`). */
  rateLimited(
    which: 'EndpointRPMExceeded' | 'EndpointTPMExceeded' = 'EndpointRPMExceeded',
  ): ErrorReply {
    const unit = which === 'EndpointRPMExceeded' ? 'RPM' : 'TPM'
    return error(
      429,
      `RateLimitExceeded.${which}`,
      `The request failed because you have exceeded the ${unit} limit for this endpoint. Please try again later.`,
      'TooManyRequests',
    )
  },
  /** 429 `ServerOverloaded`. */
  serverOverloaded(): ErrorReply {
    return error(
      429,
      'ServerOverloaded',
      'The service is currently unable to handle additional requests due to server overload. Please try again later.',
      'TooManyRequests',
    )
  },
  /** 403 `AccountOverdueError`: permanent until the bill is paid. */
  accountOverdue(): ErrorReply {
    return error(
      403,
      'AccountOverdueError',
      'The request failed because your account has an overdue balance. Please recharge your account and try again.',
      'Forbidden',
    )
  },
}
