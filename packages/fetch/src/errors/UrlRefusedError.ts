import { HourglassError, hasErrorCode } from '@hourglass/core'

/**
 * Why fetch refused a URL without sending anything to it. The two `blob:`
 * reasons are for a `blob:` URL fetch does fetch otherwise (a live one made
 * by `URL.createObjectURL` in this process, with GET): `blob-not-found` —
 * no Blob under it (never made here, revoked, or the URL given a query) —
 * and `blob-method`, a method other than GET. `invalid-location`: a
 * redirect's `Location` that does not parse as a URL, or with a space or
 * tab at its start or end, which undici never parses (always `redirect`).
 */
export type UrlRefusal =
  | 'bad-port'
  | 'unsupported-scheme'
  | 'blob-not-found'
  | 'blob-method'
  | 'credentials'
  | 'invalid-location'

/**
 * `createFetch` refused the URL before anything was sent to it: a port the
 * fetch spec blocks (`bad port`: 1, 6000, 25, … — ports of protocols a
 * crafted HTTP request could talk to), or a scheme fetch does not fetch in
 * Node (`file:`, `ftp:`, `ws:`, `about:`; `data:` and `blob:` are fetched),
 * or a `blob:` URL with no Blob behind it or asked for with another method
 * than GET. undici says so with a bare `Error` ("bad port", "unknown scheme",
 * "not implemented... yet...", "invalid method" — for a revoked blob: URL
 * fetched with GET too) that has no code, which the retry events named
 * `Error`. With
 * `redirect` true a server answered the request first and its `Location`
 * pointed here: the first request was sent, the redirect was not followed.
 * Never retried: the same URL is refused again. Not an `EgressError`: no
 * phase ran.
 */
export class UrlRefusedError extends HourglassError {
  static override readonly errorName: string = 'UrlRefusedError'
  static readonly code = 'URL_REFUSED'
  readonly reason: UrlRefusal
  /** The refused URL's scheme and, for a bad port, host and port and path (never the query); an invalid Location's text up to its query. */
  readonly url: string
  /** A redirect led there: the request itself reached the server that redirected. */
  readonly redirect: boolean

  constructor(reason: UrlRefusal, url: string, redirect: boolean, cause: unknown) {
    const what =
      reason === 'bad-port'
        ? `its port is one the fetch spec blocks (a "bad port")`
        : reason === 'blob-not-found'
          ? `no Blob is registered under that URL in this process (never made here by URL.createObjectURL, revoked, or given a query)`
          : reason === 'blob-method'
            ? `a blob: URL is fetched with GET only`
            : reason === 'credentials'
              ? redirect
                ? `the server's Location carries a user name or password (user:pass@), which fetch never follows a redirect with`
                : `it carries a user name or password (user:pass@), which fetch never sends: put them in an Authorization header`
              : reason === 'invalid-location'
                ? `the server's Location does not parse as a URL as fetch reads it (several Location headers joined with ", ", latin1 bytes decoded again as UTF-8), or has a space or tab at its start or end; the first header is shown`
                : redirect
                  ? `a redirect can only go to http: or https:`
                  : `fetch does not fetch that scheme (only http:, https:, data: and blob:)`
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
