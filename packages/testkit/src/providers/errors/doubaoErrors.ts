import type { ErrorReply } from '../types.js'
import { refuseUnknown } from './refuseUnknown.js'

const error = (status: number, code: string, message: string, type: string): ErrorReply => ({
  kind: 'error',
  status,
  body: { error: { code, message, param: '', type } },
  headers: { 'x-request-id': REQUEST_ID },
})

const REQUEST_ID = '20250101000000FAKEHOURGLASS'

/**
 * Doubao / Volcengine Ark error bodies. Status, `type` and `code` per Ark's
 * public error-code table (volcengine.com/docs/82379/1299023, English:
 * docs.byteplus.com/en/docs/ModelArk/1299023): 429 `TooManyRequests`
 * `RateLimitExceeded.EndpointRPMExceeded` / `…TPMExceeded` / `ServerOverloaded`,
 * 403 `Forbidden` `AccountOverdueError`. Messages end in "Request ID: {id}".
 */
export const doubaoErrors = {
  /** 429 `RateLimitExceeded.EndpointRPMExceeded` (or `…TPMExceeded`). */
  rateLimited(
    which: 'EndpointRPMExceeded' | 'EndpointTPMExceeded' = 'EndpointRPMExceeded',
  ): ErrorReply {
    refuseUnknown(
      'doubaoErrors.rateLimited',
      'which',
      ['EndpointRPMExceeded', 'EndpointTPMExceeded'],
      which,
    )
    // The table's wording: "The Requests Per Minute (RPM) limit of the
    // associated endpoint for your account has been exceeded. Request ID: {id}".
    const unit =
      which === 'EndpointRPMExceeded' ? 'Requests Per Minute (RPM)' : 'Tokens Per Minute (TPM)'
    return error(
      429,
      `RateLimitExceeded.${which}`,
      `The ${unit} limit of the associated endpoint for your account has been exceeded. Request ID: ${REQUEST_ID}`,
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
  /**
   * 429 `SetLimitExceeded`: the account's own inference limit for one model
   * ("Safe Experience Mode", set per model in the Ark console) is reached and
   * that model is paused — the key still serves the others. Wording as quoted
   * in volcengine/ark-cli#15.
   */
  setLimitExceeded(model = 'doubao-seed-1.6'): ErrorReply {
    return error(
      429,
      'SetLimitExceeded',
      `Your account 2100000000 has reached the set inference limit for the ${model} model, and the model service has been paused. To continue using this model, please visit the Model Activation page to adjust or close the "Safe Experience Mode". Request ID: ${REQUEST_ID}`,
      'TooManyRequests',
    )
  },
  /**
   * 429 `QuotaExceeded`, in two of the meanings Ark's error-code table gives
   * it: `'freeTrial'` (default), "Your account [%s] has exhausted its free
   * trial quota for the [%s] model" — that model's free trial spent, the
   * key's other models still served; `'queued'`, "The request has exceeded
   * the quota" — too many of the account's tasks wait in the queue, try
   * again later.
   */
  quotaExceeded(
    which: 'freeTrial' | 'queued' = 'freeTrial',
    model = 'doubao-seed-1.6',
  ): ErrorReply {
    if (which !== 'freeTrial' && which !== 'queued') {
      throw new TypeError(
        `doubaoErrors.quotaExceeded: which must be 'freeTrial' or 'queued', got ${String(which)}`,
      )
    }
    const message =
      which === 'freeTrial'
        ? `Your account [2100000000] has exhausted its free trial quota for the [${model}] model.`
        : 'The request has exceeded the quota.'
    return error(429, 'QuotaExceeded', `${message} Request ID: ${REQUEST_ID}`, 'TooManyRequests')
  },
  /**
   * 400 `OutofContextError`: the request's text and images, encoded, are more
   * tokens than the model's context window — "Total tokens of image and text
   * exceed max message tokens." (Ark's error-code table, type `BadRequest`).
   */
  outOfContext(): ErrorReply {
    return error(
      400,
      'OutofContextError',
      'Total tokens of image and text exceed max message tokens.',
      'BadRequest',
    )
  },
  /** 403 `AccountOverdueError`: permanent until the bill is paid. */
  accountOverdue(): ErrorReply {
    return error(
      403,
      'AccountOverdueError',
      `The request failed because your account has an overdue balance. Request ID: ${REQUEST_ID}`,
      'Forbidden',
    )
  },
}
