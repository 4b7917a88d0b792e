import type { Deadline } from './Deadline.js'

/**
 * The time a decision may plan with: what is left of `deadline` when it
 * enforces, Infinity when there is none or it only observes.
 *
 * Dark mode (`observe`) reports what enforcement would do and changes no
 * decision — whether to retry, to wait out a rate limit, to refuse for lack
 * of budget. Code that read `remaining()` for those decisions made an
 * observe-only deadline refuse every retry once its time had passed (and
 * cut waits short before): the behaviour the user had without Hourglass
 * changed in the mode meant to change nothing. A cancel (the client left)
 * is not a decision of this kind: it ends the work in every mode.
 */
export function enforcedRemaining(deadline: Deadline | undefined): number {
  return deadline === undefined || deadline.observe
    ? Number.POSITIVE_INFINITY
    : deadline.remaining()
}
