import { HourglassError, hasErrorCode } from '@hourglass/core'

export const GATEWAY_REQUEST = 'GATEWAY_REQUEST'

/**
 * A request the gateway refuses by itself, before any provider is asked: a
 * body that is not JSON, an unknown model; or an answer it will not pass on
 * as one (a provider's that ended in an error). Carries the OpenAI error fields.
 */
export class GatewayRequestError extends HourglassError {
  static override readonly errorName: string = 'GatewayRequestError'
  static readonly code = GATEWAY_REQUEST
  readonly status: number
  /** OpenAI's `error.type` (`invalid_request_error`). */
  readonly type: string
  /** OpenAI's `error.code` (`model_not_found`). */
  readonly errorCode: string
  readonly param: string | null
  /** A retry may be answered (no `x-should-retry: false`). Default false: the same request gets the same refusal. */
  readonly retryable: boolean

  constructor(
    details: {
      status: number
      type?: string
      errorCode: string
      param?: string | null
      message: string
      retryable?: boolean
    },
    options?: ErrorOptions,
  ) {
    super(GATEWAY_REQUEST, details.message, options)
    this.status = details.status
    this.type = details.type ?? 'invalid_request_error'
    this.errorCode = details.errorCode
    this.param = details.param ?? null
    this.retryable = details.retryable ?? false
  }
}

export function isGatewayRequestError(error: unknown): error is GatewayRequestError {
  return hasErrorCode(error, GATEWAY_REQUEST)
}
