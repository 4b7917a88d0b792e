import { boundingDeadline } from './boundingDeadline.js'
import type { Deadline } from './Deadline.js'
import { describeValue } from './describeValue.js'
import { isDeadline } from './isDeadline.js'

/**
 * The time a decision may plan with: what is left of `deadline` when it
 * enforces, Infinity when there is none or it only observes — unless an
 * enforcing deadline above it bounds it: then what that one has left
 * (`boundingDeadline`; not past one disposed while live, which no longer
 * expires: work under it is sent as under no deadline).
 *
 * Dark mode (`observe`) reports what enforcement would do and changes no
 * decision — whether to retry, to wait out a rate limit, to refuse for lack
 * of budget. Code that read `remaining()` for those decisions made an
 * observe-only deadline refuse every retry once its time had passed (and
 * cut waits short before): the behaviour the user had without Hourglass
 * changed in the mode meant to change nothing. A cancel (the client left)
 * is not a decision of this kind: it ends the work in every mode.
 *
 * An observe-only deadline under an enforcing one (a budget on trial inside
 * an enforced request, `req.deadline.child(100, { observe: true })`) is
 * ended when that one expires: read as Infinity, a retry waited out a
 * 5 s `Retry-After` the request's 500 ms could never see the end of, and
 * failed at the request's deadline where the 503 in hand was the caller's
 * to read at once (its fallback never tried).
 */
export function enforcedRemaining(deadline: Deadline | undefined): number {
  // Named here, not by `boundingDeadline` below: the caller wrote this call.
  if (deadline != null && !isDeadline(deadline)) {
    throw new TypeError(
      `enforcedRemaining: deadline must be a Deadline, got ${describeValue(deadline)}`,
    )
  }
  return boundingDeadline(deadline)?.remaining() ?? Number.POSITIVE_INFINITY
}
