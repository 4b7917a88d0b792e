import { assertMethods, RETRY_BUDGETS_METHODS } from '../assertMethods.js'
import { RetryBudgetRegistry } from './RetryBudgetRegistry.js'

let shared: RetryBudgetRegistry | undefined

/**
 * The `RetryBudgetRegistry` every `callModel` without a `retryBudgets`
 * option shares: one budget per provider for the whole process, created on
 * first use with the default bucket (10 tokens, 0.1 back per success).
 */
export function defaultRetryBudgets(): RetryBudgetRegistry {
  shared ??= new RetryBudgetRegistry()
  return shared
}

/**
 * Replaces the process-wide default; `undefined` (or `null`) drops it (the
 * next call creates a fresh one). Anything else that is no
 * `RetryBudgetRegistry` is refused (`TypeError`).
 */
export function setDefaultRetryBudgets(registry: RetryBudgetRegistry | undefined): void {
  // A single `RetryBudget` in its place was taken, and every call of the
  // process then failed as "forProvider is not a function", naming nothing.
  assertMethods(
    'setDefaultRetryBudgets',
    'registry',
    registry,
    RETRY_BUDGETS_METHODS,
    'a RetryBudgetRegistry (new RetryBudgetRegistry()) or undefined',
  )
  shared = registry ?? undefined
}
