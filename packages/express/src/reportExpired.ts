import { optionError, refuseUnknownOptions } from '@hourglass/core'
import { IngressRequest } from './IngressRequest.js'

export interface ReportExpiredOptions {
  /** The slice that ran out, if the app knows; default: the plan's slice running now. */
  slice?: string | undefined
}

const OPTION_NAMES = ['slice'] as const

/**
 * For an app that answers a request's deadline itself — its own 504 body, a
 * stream's error event, a connection it cuts — ahead of `deadline()`'s own
 * answer: tell `deadline()` the request ran out, so its end says `expired`
 * (not `ok`), the `expire` event fires (action `app`: a tracer marks the
 * request DEADLINE_EXCEEDED, the exceeded count moves) and `onExpire` is
 * called. The request's deadline is cancelled with a `DeadlineExceededError`
 * (work still running for it stops); nothing is written to the response.
 *
 * Call it when the answer is written (before the response is over). Returns
 * false, doing nothing, when `deadline()` is not in the request's chain,
 * already answered for it, or the response is over. Options that are no
 * object (`reportExpired(req, 'model')`: `'model'.slice` is a function, and
 * the expiry was reported in a slice named after String.prototype.slice), a
 * slice that is no string, or an option it does not take: a `TypeError`,
 * nothing reported.
 */
export function reportExpired(req: object, options?: ReportExpiredOptions | null): boolean {
  // `null` reads as none, as an omitted argument.
  if (options !== undefined && options !== null) {
    refuseUnknownOptions(options, OPTION_NAMES, 'reportExpired()')
    const slice: unknown = options.slice
    if (slice !== undefined && typeof slice !== 'string') {
      throw optionError('reportExpired: slice', 'a string', slice)
    }
  }
  const ingress = IngressRequest.of(req)
  if (ingress === undefined) return false
  return ingress.reportExpired(options?.slice)
}
