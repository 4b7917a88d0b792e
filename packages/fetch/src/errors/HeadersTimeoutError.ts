import { hasErrorCode } from '@hourglass/core'
import { EgressError, type EgressErrorDetails } from './EgressError.js'

/** No response headers (first byte) arrived within the limit after the request was sent; 0 body bytes. */
export class HeadersTimeoutError extends EgressError {
  static override readonly errorName: string = 'HeadersTimeoutError'
  static readonly code = 'HEADERS_TIMEOUT'

  constructor(details: EgressErrorDetails) {
    super(HeadersTimeoutError.code, 'headers', 'no response headers in time', details)
  }
}

export function isHeadersTimeout(error: unknown): error is HeadersTimeoutError {
  return hasErrorCode(error, HeadersTimeoutError.code)
}
