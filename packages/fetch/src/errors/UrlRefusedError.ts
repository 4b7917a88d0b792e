import { HourglassError, hasErrorCode } from '@hourglass/core'

/** Why fetch refused a URL without sending anything to it. */
export type UrlRefusal = 'bad-port' | 'unsupported-scheme'

/**
 * `createFetch` refused the URL before anything was sent to it: a port the
 * fetch spec blocks (`bad port`: 1, 6000, 25, … — ports of protocols a
 * crafted HTTP request could talk to), or a scheme fetch does not fetch in
 * Node (`file:`, `ftp:`, `ws:`, `about:`; `data:` is fetched). undici says
 * so with a bare `Error` ("bad port", "unknown scheme", "not implemented...
 * yet...") that has no code, which the retry events named `Error`. With
 * `redirect` true a server answered the request first and its `Location`
 * pointed here: the first request was sent, the redirect was not followed.
 * Never retried: the same URL is refused again. Not an `EgressError`: no
 * phase ran.
 */
export class UrlRefusedError extends HourglassError {
  static readonly code = 'URL_REFUSED'
  readonly reason: UrlRefusal
  /** The refused URL's scheme and, for a bad port, host and port and path (never the query). */
  readonly url: string
  /** A redirect led there: the request itself reached the server that redirected. */
  readonly redirect: boolean

  constructor(reason: UrlRefusal, url: string, redirect: boolean, cause: unknown) {
    const what =
      reason === 'bad-port'
        ? `its port is one the fetch spec blocks (a "bad port")`
        : redirect
          ? `a redirect can only go to http: or https:`
          : `fetch does not fetch that scheme (only http:, https: and data:)`
    super(
      UrlRefusedError.code,
      redirect
        ? `fetch refused to follow a redirect to ${url}: ${what}; the redirect was not followed`
        : `fetch refused ${url}: ${what}; nothing was sent`,
      { cause },
    )
    this.reason = reason
    this.url = url
    this.redirect = redirect
  }
}

export function isUrlRefused(error: unknown): error is UrlRefusedError {
  return hasErrorCode(error, UrlRefusedError.code)
}
