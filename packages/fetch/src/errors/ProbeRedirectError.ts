import { HourglassError, hasErrorCode } from '@hourglass/core'
import { unloggedField } from './unloggedField.js'
import { withoutQuery } from './withoutQuery.js'

/**
 * `probe()` was pointed at a URL that redirects. Refused rather than followed:
 * fetch follows a redirect inside one call, and the attempt a probe times is
 * then the last hop's alone — a slow first hop would vanish from every
 * figure, and a limit suggested from them would cut every call.
 */
export class ProbeRedirectError extends HourglassError {
  static override readonly errorName: string = 'ProbeRedirectError'
  static readonly code = 'PROBE_REDIRECTED'
  /** The redirect's status: 301, 302, 303, 307 or 308. */
  readonly status: number
  /** Where it redirects (the `Location` header, resolved against the URL; the message leaves its query out). Not enumerable: kept out of log lines. */
  declare readonly location: string

  constructor(url: string, status: number, location: string) {
    // Neither query in the message, as in the package's other redirect
    // errors: a message is logged, and a query may carry a key or a signature.
    super(
      ProbeRedirectError.code,
      `probe: ${withoutQuery(url)} answered ${status}, a redirect to ${withoutQuery(location)}: probe the URL it redirects to (probe times one request; across a redirect it would time the last hop alone)`,
    )
    this.status = status
    // Not enumerable: the message leaves its query out, and a logger would print the field whole.
    unloggedField(this, 'location', location)
  }
}

export function isProbeRedirect(error: unknown): error is ProbeRedirectError {
  return hasErrorCode(error, ProbeRedirectError.code)
}
