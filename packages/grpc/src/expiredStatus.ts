import { Metadata, status } from '@grpc/grpc-js'
import {
  DEADLINE_EXPIRED_HEADER,
  type DeadlineExceededError,
  type DeadlineSource,
  type InvalidDeadlineHeader,
  isCallersBudget,
} from '@hourglass/core'

/**
 * The trailer of a `DEADLINE_EXCEEDED` for the caller's own budget, like the
 * 504's header: the caller's budget is gone too, so it must not retry.
 */
export function expiredTrailer(): Metadata {
  const trailer = new Metadata()
  trailer.set(DEADLINE_EXPIRED_HEADER, '1')
  return trailer
}

/** How a call's budget was set, as `readDeadline` read its metadata. */
export interface ExpiredBudget {
  /** The budget the call was given, before the reserve, in ms. */
  ms: number
  /** The trusted header it came from; undefined: the server's `defaultMs`. */
  source: DeadlineSource | undefined
  /** The caller's value was larger and was cut to `maxMs`. */
  clamped: boolean
  /** Trusted headers that were malformed (`strict` off). */
  invalid: readonly InvalidDeadlineHeader[]
  /** Deadline headers the call sent that the server does not trust. */
  untrusted: readonly DeadlineSource[]
  /** Whole ms from the call's arrival to our interceptor, taken off the budget. */
  heldMs: number
  /** An interceptor before ours (an auth check) held the metadata those ms; else they passed in the call's first turn. */
  held: boolean
}

/**
 * The status the server interceptor answers with when a call's time runs out.
 * The details start with core's `DeadlineExceededError` message for the
 * handler's deadline (the reason its signal aborted with); its two numbers
 * are the same, so the parenthesis says what the caller can act on: where
 * the budget came from (its header, the server's `maxMs` cap, or
 * `defaultMs` and why: none sent, one not trusted, one malformed), then the
 * reserve kept back. Told "the 300 ms left when the call arrived", a caller
 * that sent 5000 ms (cut to maxMs), or one whose header was not trusted,
 * could not tell what to fix. The trailer `x-deadline-expired: 1` only when
 * that budget was the caller's (core's `isCallersBudget`).
 */
export function expiredStatus(
  expired: DeadlineExceededError,
  budget: ExpiredBudget,
  reserveMs: number,
): { code: status; details: string; metadata: Metadata } {
  // The hold is off the budget as the reserve is: left out, "a 150 ms budget
  // (the 400 ms … left when the call arrived)" hid an auth check's 250 ms.
  const held =
    budget.heldMs === 0
      ? ''
      : budget.held
        ? `, less ${budget.heldMs} ms it waited before reaching this interceptor`
        : `, less ${budget.heldMs} ms between its arrival and this interceptor`
  const reserve = reserveMs > 0 ? `, less ${Math.round(reserveMs)} ms kept back to answer` : ''
  return {
    code: status.DEADLINE_EXCEEDED,
    details: `${expired.message} (the ${Math.round(budget.ms)} ms ${cameFrom(budget)}${held}${reserve})`,
    // Our own cap's: no trailer. With it, a caller 200 ms into its 5 s took
    // the status for its own expiry (an Express edge answered 504 "do not
    // retry" with 4.8 s left).
    metadata: isCallersBudget(budget) ? expiredTrailer() : new Metadata(),
  }
}

function cameFrom(budget: ExpiredBudget): string {
  if (budget.source !== undefined) {
    return budget.clamped
      ? `this server allows a call (maxMs: its ${budget.source} asked for more)`
      : `its ${budget.source} left when the call arrived`
  }
  if (budget.invalid.length > 0) {
    const why = budget.invalid.map(({ header, reason }) => `${header}: ${reason}`).join('; ')
    return `the server gives a call without a valid deadline (${why})`
  }
  if (budget.untrusted.length > 0) {
    return `the server gives a call without a deadline it trusts (not trusted: ${budget.untrusted.join(', ')})`
  }
  return 'the server gives a call without a deadline'
}
