import { type Deadline, markExpiryOf } from './Deadline.js'
import { DeadlineExceededError } from './DeadlineExceededError.js'

/**
 * @internal `deadline`'s expiry as an error made for it rather than by its
 * timer — told early (too little budget left to send a request), or by a
 * guard, a slice or a client whose own timer won the race — with its budget,
 * its elapsed time and its name (or the `slice` given), and marked as its
 * (`markExpiryOf`): an Express app answers it as the request's expiry, and a
 * slice reports it as its own, as the deadline's own error would be.
 */
export function expiryError(
  deadline: Deadline,
  options: { slice?: string | undefined; cause?: unknown } = {},
): DeadlineExceededError {
  return markExpiryOf(
    new DeadlineExceededError({
      budgetMs: deadline.budgetMs,
      elapsedMs: deadline.elapsed(),
      slice: 'slice' in options ? options.slice : deadline.name,
      cause: options.cause,
    }),
    deadline,
  )
}
