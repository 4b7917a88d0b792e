import { HourglassError, hasErrorCode } from '@hourglass/core'
import { unloggedField } from './unloggedField.js'
import { withoutQuery } from './withoutQuery.js'

/**
 * `createFetch` was answered with a redirect under `redirect: 'error'`, as
 * the caller asked fetch to fail then. undici fails it with a bare `Error`
 * ("unexpected redirect", no code) inside its "fetch failed": this names the
 * status and where it redirects. Never retried: the server would answer the
 * same. Not an `EgressError`: no phase failed.
 */
export class UnexpectedRedirectError extends HourglassError {
  static override readonly errorName: string = 'UnexpectedRedirectError'
  static readonly code = 'UNEXPECTED_REDIRECT'
  /** The redirect's status (301, 302, 303, 307 or 308). */
  readonly status: number
  /** Where it redirects (the `Location` header, resolved against the URL that answered), when it gave one. Not enumerable: kept out of log lines. */
  declare readonly location: string | undefined

  constructor(url: string, status: number, location: string | undefined, cause: unknown) {
    super(
      UnexpectedRedirectError.code,
      `${url} answered ${status}, a redirect${location === undefined ? '' : ` to ${withoutQuery(location)}`}, and redirect: 'error' refuses to follow it`,
      { cause },
    )
    this.status = status
    // Not enumerable: the message leaves its query out, and a logger would print the field whole.
    unloggedField(this, 'location', location)
  }
}

export function isUnexpectedRedirect(error: unknown): error is UnexpectedRedirectError {
  return hasErrorCode(error, UnexpectedRedirectError.code)
}
