import { hasErrorCode } from '@hourglass/core'
import { EgressError, type EgressErrorDetails } from './EgressError.js'

/** TCP connect (and TLS handshake for https) did not finish within its limit. */
export class ConnectTimeoutError extends EgressError {
  static readonly code = 'CONNECT_TIMEOUT'

  constructor(details: EgressErrorDetails) {
    super(ConnectTimeoutError.code, 'connect', 'connect timed out', details)
  }
}

export function isConnectTimeout(error: unknown): error is ConnectTimeoutError {
  return hasErrorCode(error, ConnectTimeoutError.code)
}
