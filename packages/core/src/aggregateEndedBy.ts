import { type Deadline, isExpiryOf } from './Deadline.js'
import { isDeadlineExceeded } from './DeadlineExceededError.js'
import { endedBy } from './endedBy.js'

/**
 * @internal What ended every error of an AggregateError (`Promise.any` over
 * hedged calls), for the error handlers that map deadline errors (Express's
 * and gRPC's `deadlineErrors()`): the aggregate is answered as it. Either
 * one and the same error ended them all (a cap under the request's deadline
 * cut every call: a 504 / `DEADLINE_EXCEEDED`, as for one call; it was the
 * app's 500 / `UNKNOWN`), or each is an error of its own telling the expiry
 * of `deadline` (or of one under it): hedged calls whose backends each
 * answered it early. Undefined otherwise, and for a hostile `errors`.
 * `read` is how a handler reads one error (gRPC's reads a status first).
 */
export function aggregateEndedBy(
  error: unknown,
  deadline: Deadline | undefined,
  read: (member: unknown) => ReturnType<typeof endedBy> = endedBy,
): ReturnType<typeof endedBy> {
  try {
    // Inside: `instanceof` on a revoked Proxy throws.
    if (!(error instanceof AggregateError)) return undefined
    const errors: unknown = error.errors
    if (!Array.isArray(errors) || errors.length === 0) return undefined
    const first = read(errors[0])
    if (first === undefined) return undefined
    if (errors.every((member: unknown) => read(member) === first)) return first
    if (
      deadline !== undefined &&
      isDeadlineExceeded(first) &&
      errors.every((member: unknown) => {
        const ended = read(member)
        return isDeadlineExceeded(ended) && isExpiryOf(ended, deadline)
      })
    ) {
      return first
    }
    return undefined
  } catch {
    return undefined
  }
}
