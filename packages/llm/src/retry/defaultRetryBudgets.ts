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

/** Replaces the process-wide default; `undefined` drops it (the next call creates a fresh one). */
export function setDefaultRetryBudgets(registry: RetryBudgetRegistry | undefined): void {
  shared = registry
}
