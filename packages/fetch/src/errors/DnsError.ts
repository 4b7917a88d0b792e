import { hasErrorCode } from '@hourglass/core'
import { EgressError, type EgressErrorDetails } from './EgressError.js'

/**
 * The name could not be resolved (`ENOTFOUND`, `EAI_AGAIN`, no address).
 * Never retried: a resolver that just said "no" says it again at once, and a
 * quick "no" is not the fast refused connect the retry rule is for. A lookup
 * that did not answer in time is a `DnsTimeoutError`.
 */
export class DnsError extends EgressError {
  static override readonly errorName: string = 'DnsError'
  static readonly code = 'DNS_FAILED'
  /** The resolver's error code (`ENOTFOUND`, `EAI_AGAIN`, …) when there is one. */
  readonly osCode: string | undefined
  readonly hostname: string

  constructor(details: EgressErrorDetails & { hostname: string }) {
    const osCode = (details.cause as { code?: unknown } | undefined)?.code
    super(
      DnsError.code,
      'dns',
      `name lookup failed for ${details.hostname}${typeof osCode === 'string' ? `: ${osCode}` : ''}`,
      details,
    )
    this.osCode = typeof osCode === 'string' ? osCode : undefined
    this.hostname = details.hostname
  }
}

export function isDnsError(error: unknown): error is DnsError {
  return hasErrorCode(error, DnsError.code)
}
