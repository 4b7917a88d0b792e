import { HourglassError, hasErrorCode } from '@hourglass/core'

/**
 * fetch followed as many redirects as it allows (20) and was sent another: a
 * server that redirects to itself, or a chain longer than fetch follows.
 * Never retried: a retry starts again at the first URL and walks the same
 * chain, every hop of which a server has already answered.
 */
export class TooManyRedirectsError extends HourglassError {
  static override readonly errorName: string = 'TooManyRedirectsError'
  static readonly code = 'TOO_MANY_REDIRECTS'
  /** The redirects followed before fetch gave up. */
  readonly redirects: number

  constructor(redirects: number, cause: unknown) {
    super(
      TooManyRedirectsError.code,
      `too many redirects: fetch followed ${redirects} and was sent another (a redirect loop?)`,
      { cause },
    )
    this.redirects = redirects
  }
}

export function isTooManyRedirects(error: unknown): error is TooManyRedirectsError {
  return hasErrorCode(error, TooManyRedirectsError.code)
}
