import { Metadata, status } from '@grpc/grpc-js'
import { DEADLINE_EXPIRED_HEADER } from '@hourglass/core'

/**
 * The trailer of every `DEADLINE_EXCEEDED` Hourglass sends, like the 504's
 * header: the caller's budget is gone too, so it must not retry.
 */
export function expiredTrailer(): Metadata {
  const trailer = new Metadata()
  trailer.set(DEADLINE_EXPIRED_HEADER, '1')
  return trailer
}

/** The status the server interceptor answers with when a call's time runs out. */
export function expiredStatus(
  budgetMs: number,
  elapsedMs: number,
): { code: status; details: string; metadata: Metadata } {
  return {
    code: status.DEADLINE_EXCEEDED,
    details: `deadline exceeded: ${Math.round(elapsedMs)} ms elapsed of a ${Math.round(budgetMs)} ms budget`,
    metadata: expiredTrailer(),
  }
}
