import { HourglassError, hasErrorCode } from '@hourglass/core'
import { unloggedField } from './unloggedField.js'
import { withoutQuery } from './withoutQuery.js'

/**
 * `createFetch` was answered 301, 302, 307 or 308 with a `Location` for a
 * request whose body is a stream (a `ReadableStream`, an async iterable, a
 * `Request` built on one), under `redirect: 'follow'`. Following it means
 * sending the body again, and a stream is read once: fetch refuses (the
 * fetch spec's rule), and undici says so with a bare `Error` that has no
 * message and no code — this names what happened and what to do instead.
 * Never retried: a retry could not send the body either, and the server
 * would answer the same. Not an `EgressError`: no phase failed.
 */
export class RedirectWithStreamBodyError extends HourglassError {
  static override readonly errorName: string = 'RedirectWithStreamBodyError'
  static readonly code = 'REDIRECT_WITH_STREAM_BODY'
  /** The redirect's status: 301, 302, 307 or 308. */
  readonly status: number
  /** Where it redirects (the `Location` header, resolved against the URL that answered). Not enumerable: kept out of log lines. */
  declare readonly location: string

  constructor(url: string, status: number, location: string, cause: unknown) {
    super(
      RedirectWithStreamBodyError.code,
      `${url} answered ${status}, a redirect to ${withoutQuery(location)}, which fetch follows only with a body it can send again, and a stream body is read once: send a body that can be sent again (a string, Buffer, Blob, FormData or URLSearchParams), or pass redirect: 'manual' and send it to the Location yourself`,
      { cause },
    )
    this.status = status
    // Not enumerable: the message leaves its query out, and a logger would print the field whole.
    unloggedField(this, 'location', location)
  }
}

export function isRedirectWithStreamBody(error: unknown): error is RedirectWithStreamBodyError {
  return hasErrorCode(error, RedirectWithStreamBodyError.code)
}
