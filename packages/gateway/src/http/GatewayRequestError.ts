import { HourglassError, hasErrorCode } from '@hourglass/core'

export const GATEWAY_REQUEST = 'GATEWAY_REQUEST'

/**
 * A request the gateway refuses by itself, before any provider is asked: a
 * body that is not JSON, an unknown model. Carries the OpenAI error fields.
 */
export class GatewayRequestError extends HourglassError {
  static readonly code = GATEWAY_REQUEST
  readonly status: number
  /** OpenAI's `error.type` (`invalid_request_error`). */
  readonly type: string
  /** OpenAI's `error.code` (`model_not_found`). */
  readonly errorCode: string
  readonly param: string | null

  constructor(
    details: {
      status: number
      type?: string
      errorCode: string
      param?: string | null
      message: string
    },
    options?: ErrorOptions,
  ) {
    super(GATEWAY_REQUEST, details.message, options)
    this.status = details.status
    this.type = details.type ?? 'invalid_request_error'
    this.errorCode = details.errorCode
    this.param = details.param ?? null
  }
}

export function isGatewayRequestError(error: unknown): error is GatewayRequestError {
  return hasErrorCode(error, GATEWAY_REQUEST)
}
