import { hasErrorCode } from '@hourglass/core'
import { EgressError, type EgressErrorDetails } from './EgressError.js'

const WHAT = 'name lookup timed out'

/** The name lookup did not answer within its limit (the lookup is abandoned, not waited for). */
export class DnsTimeoutError extends EgressError {
  static override readonly errorName: string = 'DnsTimeoutError'
  static readonly code = 'DNS_TIMEOUT'
  /**
   * The name that was looked up, as `DnsError` names it. Undefined only for
   * one raised where no connector of ours looked the name up.
   */
  readonly hostname: string | undefined

  constructor(details: EgressErrorDetails & { hostname?: string | undefined }) {
    super(DnsTimeoutError.code, 'dns', messageFor(details.hostname), details)
    this.hostname = details.hostname
  }
}

export function isDnsTimeout(error: unknown): error is DnsTimeoutError {
  return hasErrorCode(error, DnsTimeoutError.code)
}

/**
 * @internal Name the host on a DNS timeout raised by the attempt's phase
 * timer, which times a phase and knows no host: the connector that looked
 * the name up does, and names it as the attempt ends — before anyone hears
 * the error (the attempt's finish hooks run ahead of its abort handlers).
 * Its stack is not read here: V8 writes the message into it when it is
 * first read, so it says the same.
 */
export function nameDnsTimeoutHost(error: DnsTimeoutError, hostname: string): void {
  if (error.hostname !== undefined) return
  ;(error as { hostname: string | undefined }).hostname = hostname
  if (error.message.startsWith(WHAT)) {
    error.message = `${messageFor(hostname)}${error.message.slice(WHAT.length)}`
  }
}

function messageFor(hostname: string | undefined): string {
  return hostname === undefined ? WHAT : `${WHAT} for ${hostname}`
}
