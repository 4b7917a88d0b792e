import { Metadata, status } from '@grpc/grpc-js'
import { DEADLINE_EXPIRED_HEADER, type DeadlineExceededError } from '@hourglass/core'

/**
 * The trailer of every `DEADLINE_EXCEEDED` Hourglass sends, like the 504's
 * header: the caller's budget is gone too, so it must not retry.
 */
export function expiredTrailer(): Metadata {
  const trailer = new Metadata()
  trailer.set(DEADLINE_EXPIRED_HEADER, '1')
  return trailer
}

/**
 * The status the server interceptor answers with when a call's time runs out.
 * The details are core's `DeadlineExceededError` message for the handler's
 * deadline (the reason its signal aborted with), then, when a reserve was
 * kept, the budget the call came with and the reserve. "279 ms elapsed of a
 * 287 ms budget" told a caller a budget that counted the server's reserve,
 * and a call cut before its own time seemed to be.
 */
export function expiredStatus(
  expired: DeadlineExceededError,
  budget: { ms: number; fromDefault: boolean },
  reserveMs: number,
): { code: status; details: string; metadata: Metadata } {
  const came = budget.fromDefault
    ? 'the server gives a call without a deadline'
    : 'left when the call arrived'
  return {
    code: status.DEADLINE_EXCEEDED,
    details:
      reserveMs > 0
        ? `${expired.message} (the ${Math.round(budget.ms)} ms ${came}, less ${Math.round(reserveMs)} ms kept back to answer)`
        : expired.message,
    metadata: expiredTrailer(),
  }
}
