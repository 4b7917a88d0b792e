export {
  type BudgetExceededDetails,
  BudgetExceededError,
  isBudgetExceeded,
} from './BudgetExceededError.js'
export { CostBudget, type CostBudgetOptions, type ModelPrice } from './CostBudget.js'
export {
  clampAttempts,
  decideRetry,
  MAX_ATTEMPTS_CAP,
  type Priority,
  type RetryDecision,
  type RetryDecisionInput,
} from './decideRetry.js'
export { defaultRetryBudgets, setDefaultRetryBudgets } from './defaultRetryBudgets.js'
export { estimatePromptTokens, MESSAGE_OVERHEAD_TOKENS } from './estimatePromptTokens.js'
export { canonicalJson, idempotencyKey } from './idempotencyKey.js'
export {
  MemorySideEffectStore,
  type MemorySideEffectStoreOptions,
} from './MemorySideEffectStore.js'
export {
  isModelUnavailable,
  type ModelFailure,
  type ModelUnavailableDetails,
  ModelUnavailableError,
} from './ModelUnavailableError.js'
export type { ModelOutlook } from './modelOutlook.js'
export {
  isRateLimited,
  type RateLimit,
  type RateLimitedDetails,
  RateLimitedError,
} from './RateLimitedError.js'
export { isRepairFailed, type RepairFailedDetails, RepairFailedError } from './RepairFailedError.js'
export { RetryBudget, type RetryBudgetOptions } from './RetryBudget.js'
export { RetryBudgetRegistry } from './RetryBudgetRegistry.js'
export {
  backoffMs,
  type DelaySource,
  type RandomSource,
  RETRY_DELAY_DEFAULTS,
  type RetryDelay,
  type RetryDelayInput,
  type RetryDelayOptions,
  retryDelay,
} from './retryDelay.js'
export type { SideEffectRecord, SideEffectStore } from './SideEffectStore.js'
export {
  isStreamInterrupted,
  type StreamInterruptedDetails,
  StreamInterruptedError,
} from './StreamInterruptedError.js'
export { DEFAULT_SIDE_EFFECT_TTL_MS, type SideEffectOptions, sideEffect } from './sideEffect.js'
export { stripThinkingSignatures } from './stripThinkingSignatures.js'
export { isUnknownPrice, UnknownPriceError } from './UnknownPriceError.js'
export {
  type RepairableCall,
  type Repaired,
  type RepairOptions,
  type Validate,
  withRepair,
} from './withRepair.js'
