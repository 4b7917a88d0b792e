import { type Deadline, expiryError } from '@hourglass/core'

/**
 * The error to fail with, without touching the network, when the deadline has
 * ended or less than `minBudgetMs` is left; undefined when there is time.
 * An observe-only deadline refuses for a cancel alone (its `reason`, which
 * an observed expiry leaves undefined): dark mode changes no outcome by
 * time, but a caller that has gone is gone in every mode.
 */
export function noBudgetError(deadline: Deadline | undefined, minBudgetMs: number): unknown {
  if (!deadline) return undefined
  if (deadline.observe) return deadline.reason
  if (deadline.done) return deadline.reason
  const left = deadline.remaining()
  if (left > 0 && left >= minBudgetMs) return undefined
  // The deadline's expiry, told early: an Express app answers it as the request's.
  return expiryError(deadline)
}
