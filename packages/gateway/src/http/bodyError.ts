import { GatewayRequestError } from './GatewayRequestError.js'

/** body-parser's errors (bad JSON, too large) → what the client should fix. */
export function bodyError(error: unknown): GatewayRequestError | undefined {
  const type = (error as { type?: unknown } | null)?.type
  if (type === 'entity.parse.failed') {
    return new GatewayRequestError({
      status: 400,
      errorCode: 'invalid_json',
      message: 'the body is not valid JSON',
    })
  }
  if (type === 'entity.too.large') {
    return new GatewayRequestError({
      status: 413,
      errorCode: 'request_too_large',
      message: 'the body is too large',
    })
  }
  if (
    (typeof type === 'string' && type.startsWith('encoding.')) ||
    type === 'charset.unsupported'
  ) {
    return new GatewayRequestError({
      status: 415,
      errorCode: 'unsupported_encoding',
      message: 'the body encoding is not supported',
    })
  }
  return undefined
}
