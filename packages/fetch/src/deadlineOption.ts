import type { Deadline } from '@hourglass/core'

/**
 * Refuses a `deadline` that is no Deadline (a number of ms, a Date): it
 * would otherwise fail later as "deadline.remaining is not a function".
 * The call and `fetch.wouldRefuse()` refuse it with the same TypeError.
 */
export function checkDeadline(deadline: unknown): asserts deadline is Deadline | undefined {
  if (deadline !== undefined && typeof (deadline as Partial<Deadline>).onDone !== 'function') {
    throw new TypeError(
      `deadline must be a Deadline from @hourglass/core (Deadline.after(ms)), got ${deadline === null ? 'null' : typeof deadline}`,
    )
  }
}
