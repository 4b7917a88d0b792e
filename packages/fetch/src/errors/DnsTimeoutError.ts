import { hasErrorCode } from '@hourglass/core'
import { EgressError, type EgressErrorDetails } from './EgressError.js'

/** The name lookup did not answer within its limit (the lookup is abandoned, not waited for). */
export class DnsTimeoutError extends EgressError {
  static readonly code = 'DNS_TIMEOUT'

  constructor(details: EgressErrorDetails) {
    super(DnsTimeoutError.code, 'dns', 'name lookup timed out', details)
  }
}

export function isDnsTimeout(error: unknown): error is DnsTimeoutError {
  return hasErrorCode(error, DnsTimeoutError.code)
}
