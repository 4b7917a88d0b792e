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
  CostBudget,
  callModel,
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
  type ModelAdapter,
  type ModelPrice,
  OPENAI_SSE_DONE,
  OpenAIChunkEncoder,
  openAICompatible,
  openAISseData,
  ProviderError,
  parseOpenAIRequest,
  RedisCooldownStore,
  RetryBudgetRegistry,
  type SendOptions,
  SseRecutter,
  type StreamEvent,
  toOpenAIError,
  toOpenAIResponse,
} from '@hourglass/llm'
