import { boundingDeadline, type Deadline, expiryError } from '@hourglass/core'

/**
 * The error to fail with, without touching the network, when the deadline has
 * ended or less than `minBudgetMs` is left; undefined when there is time.
 * An observe-only deadline refuses for a cancel alone (its `reason`, which
 * an observed expiry leaves undefined): dark mode changes no outcome by
 * time, but a caller that has gone is gone in every mode.
 *
 * Under an enforcing deadline above it (a budget on trial inside an
 * enforced request, `req.deadline.child(100, { observe: true })`), the
 * enforcing one decides, as it would for a call made under it: read off the
 * trial alone, a call the request had 3 ms left for (or none, its timer not
 * yet run) was sent anyway, for an answer nobody would wait for.
 *
 * `began` is that enforcing one as the call found it when it began
 * (`OutboundCall.bound`): a trial disposed since then bounds nothing new,
 * but the call's next attempt or hop is still the call's, bounded by it.
 */
export function noBudgetError(
  deadline: Deadline | undefined,
  minBudgetMs: number,
  began?: Deadline,
): unknown {
  if (!deadline) return undefined
  if (deadline.done && deadline.reason !== undefined) return deadline.reason
  const bound = boundingDeadline(deadline) ?? began
  if (!bound) return undefined
  if (bound.done) return bound.reason
  const left = bound.remaining()
  if (left > 0 && left >= minBudgetMs) return undefined
  // The deadline's expiry, told early: an Express app answers it as the request's.
  return expiryError(bound)
}
