import { GatewayRequestError } from './GatewayRequestError.js'

/**
 * The router's own error for a path parameter that is not valid
 * percent-encoding (`GET /v1/models/%E0%A4%A`): Express 4 and 5 both throw
 * the `URIError` of `decodeURIComponent` with `status: 400` before any
 * handler runs. The client's to fix: a 400, not the 500 of an error of ours.
 */
export function pathError(error: unknown): GatewayRequestError | undefined {
  if (!(error instanceof URIError) || (error as { status?: unknown }).status !== 400) {
    return undefined
  }
  return new GatewayRequestError({
    status: 400,
    errorCode: 'invalid_request',
    message: 'the path is not valid percent-encoding',
  })
}
