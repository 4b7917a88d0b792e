/**
 * Everything the gateway takes from @hourglass/llm, in one place: the
 * gateway owns no retry, fallback, key-rotation or error-classification
 * logic of its own — that is llm's one policy.
 */
export {
  Admission,
  type AttemptRecord,
  anthropic,
  type ChatRequest,
  type CooldownExtension,
  type CooldownStore,
  CostBudget,
  callModel,
  dialects,
  type ErrorKind,
  estimatePromptTokens,
  gemini,
  isBudgetExceeded,
  isInvalidChatRequest,
  isKeysRetired,
  isModelUnavailable,
  isProviderError,
  isRateLimited,
  isRequestRejected,
  isStreamInterrupted,
  type KeysRetiredError,
  llmChannels,
  type ModelAdapter,
  type ModelPrice,
  openAICompatible,
  type ProviderError,
  ProviderLimits,
  REQUEST_BOUND_KINDS,
  RedisCooldownStore,
  RetryBudgetRegistry,
  type SendOptions,
  type StreamEvent,
} from '@hourglass/llm'
