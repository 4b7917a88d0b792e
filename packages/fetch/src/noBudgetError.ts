import { type Deadline, DeadlineExceededError } from '@hourglass/core'

/**
 * The error to fail with, without touching the network, when the deadline has
 * ended or less than `minBudgetMs` is left; undefined when there is time.
 * Observe-only deadlines never refuse (dark mode must not change outcomes).
 */
export function noBudgetError(deadline: Deadline | undefined, minBudgetMs: number): unknown {
  if (!deadline || deadline.observe) return undefined
  if (deadline.done) return deadline.reason
  const left = deadline.remaining()
  if (left > 0 && left >= minBudgetMs) return undefined
  return new DeadlineExceededError({
    budgetMs: deadline.budgetMs,
    elapsedMs: deadline.elapsed(),
    slice: deadline.name,
  })
}
