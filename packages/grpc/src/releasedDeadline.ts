import type { Deadline } from '@hourglass/core'

/**
 * @internal The deadline was disposed while live: an ingress released it
 * when its call or request was over (released, not aborted, so work the
 * handler leaves running on purpose goes on), and it no longer expires. Told
 * by what core shows of it: no expiry, though it was made with a budget —
 * a deadline made without one (`Deadline.never()`, `Deadline.after(Infinity)`,
 * a caller's choice to exempt a call) has none either.
 *
 * No caller chose "no deadline" for a call made under it: the call has no
 * deadline at all, and gets the client's `defaultMs`. Taken for a caller's
 * `Deadline.never()`, such a call (an audit write after the answer, a cache
 * warmed by a finished job) went out with none, and waited as long as its
 * server did.
 */
export function isReleased(deadline: Deadline): boolean {
  return !Number.isFinite(deadline.expiresAt) && Number.isFinite(deadline.budgetMs)
}
