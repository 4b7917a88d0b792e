import { GatewayRequestError, isGatewayRequestError } from './GatewayRequestError.js'

/**
 * The body reader's errors, typed as body-parser's (bad JSON, too large, a
 * body its Content-Encoding cannot decode, invalid UTF-8; see `jsonBody`)
 * → what the client should fix. Every error it raises for the client's
 * bytes is a 4xx here; the rest (undefined) are ours.
 */
export function bodyError(error: unknown): GatewayRequestError | undefined {
  // Already the client's answer (a body refused for its depth before the
  // parse): its `type` is OpenAI's, which the last rule below took for a
  // body-parser type and answered as "the body could not be read".
  if (isGatewayRequestError(error)) return error
  const { type, status, code, limit } = (error ?? {}) as {
    type?: unknown
    status?: unknown
    code?: unknown
    limit?: unknown
  }
  if (type === 'entity.parse.failed') {
    return refuse(400, 'invalid_json', 'the body is not valid JSON')
  }
  if (type === 'entity.too.large') {
    // The code a request over a provider's TPM limit gets too (the same
    // remedy: a smaller request, never the same one again): the message
    // tells them apart, and names the limit to stay under.
    return refuse(
      413,
      'request_too_large',
      typeof limit === 'number'
        ? `the body exceeds this gateway's limit of ${limit} bytes`
        : 'the body is too large',
    )
  }
  if (type === JSON_TOO_MANY_KEYS) {
    // Its message names the limit (jsonKeyLimit.ts): the client's to fix, no retry helps.
    return refuse(413, 'request_too_large', String((error as Error).message))
  }
  if (type === INVALID_UTF8) {
    return refuse(400, 'invalid_utf8', 'the body is not valid UTF-8')
  }
  if (type === INVALID_UTF16) {
    // The charset the client named, in the message: the code says the same as for UTF-8.
    return refuse(400, 'invalid_utf8', String((error as Error).message))
  }
  if (type === TRANSFER_CODING_UNSUPPORTED) {
    // Not the client's content but how it was framed (RFC 9112 §6.1): a
    // 501 naming the coding; the same framing gets the same answer.
    return refuse(501, 'unsupported_transfer_encoding', String((error as Error).message))
  }
  if (
    (typeof type === 'string' && type.startsWith('encoding.')) ||
    type === 'charset.unsupported'
  ) {
    // The message names the charset or coding sent and what is accepted: a
    // bare "not supported" sent users looking at compression for a charset.
    return refuse(415, 'unsupported_encoding', String((error as Error).message))
  }
  // zlib's own errors, passed on by body-parser with status 400 and no `type`:
  // Z_DATA_ERROR / Z_BUF_ERROR (gzip, deflate), ERR__ERROR_* (br), ZSTD_error_*
  // (zstd: Node names them as libzstd does, `ZSTD_error_prefix_unknown` for
  // bytes that are no zstd frame; read as ERR_ZSTD_*, they were a 500).
  if (status === 400 && typeof code === 'string' && /^(Z_|ERR__|ZSTD_error_)/.test(code)) {
    return refuse(
      400,
      'invalid_encoding',
      'the body could not be decoded as its Content-Encoding says (corrupt or truncated)',
    )
  }
  if (type === 'request.size.invalid') {
    return refuse(400, 'invalid_body', 'the body is not as long as its Content-Length says')
  }
  if (typeof type === 'string' && typeof status === 'number' && status >= 400 && status < 500) {
    return refuse(400, 'invalid_body', 'the body could not be read')
  }
  return undefined
}

/** The `type` of the error `verifyUtf8` throws. */
export const INVALID_UTF8 = 'charset.invalid'

/** The `type` of a body that is not valid for the UTF-16 charset it names. */
export const INVALID_UTF16 = 'charset.invalid.utf16'

/** The `type` of a body framed with a transfer coding other than chunked (`transferCoding.ts`). */
export const TRANSFER_CODING_UNSUPPORTED = 'transfer.encoding.unsupported'

/** The `type` of a body refused for its keys before parsing (`jsonKeyLimit.ts`). */
export const JSON_TOO_MANY_KEYS = 'entity.too.many.keys'

function refuse(status: number, errorCode: string, message: string): GatewayRequestError {
  return new GatewayRequestError({ status, errorCode, message })
}
