// The public API of @hourglass/llm, by name. Internal helpers stay unexported.

export { anthropic } from './adapters/anthropic.js'
export { type BodyHook, createAdapter } from './adapters/createAdapter.js'
export { gemini } from './adapters/gemini.js'
export type {
  AdapterOptions,
  ModelAdapter,
  OpenResult,
  SendOptions,
  SendResult,
} from './adapters/ModelAdapter.js'
export { type OpenAICompatibleOptions, openAICompatible } from './adapters/openAICompatible.js'
export {
  Admission,
  type AdmissionForecast,
  type AdmissionOptions,
  type AdmissionRequest,
  type AdmissionTarget,
} from './admission/Admission.js'
export type { AdmissionPermit } from './admission/AdmissionPermit.js'
export type { CooldownExtension, CooldownStore } from './admission/CooldownStore.js'
export { defaultAdmission, setDefaultAdmission } from './admission/defaultAdmission.js'
export { type CooldownInput, defaultCooldownMs } from './admission/defaultCooldownMs.js'
export { endpointId, keyId, NO_KEY_ID } from './admission/keyId.js'
export { LatencyTracker, type LatencyTrackerOptions } from './admission/LatencyTracker.js'
export {
  MemoryCooldownStore,
  type MemoryCooldownStoreOptions,
} from './admission/MemoryCooldownStore.js'
export {
  type ProviderLimit,
  ProviderLimits,
  type ProviderLimitsOptions,
} from './admission/ProviderLimits.js'
export {
  COOLDOWN_SCRIPT,
  RedisCooldownStore,
  type RedisCooldownStoreOptions,
  type RedisScriptClient,
} from './admission/RedisCooldownStore.js'
export type { AdmissionFailure, AdmissionOutcome } from './admission/slot.js'
export { canonicalJson, idempotencyKey } from './agent/idempotencyKey.js'
export {
  MemorySideEffectStore,
  type MemorySideEffectStoreOptions,
} from './agent/MemorySideEffectStore.js'
export {
  type AgentTool,
  type RunTurnsOptions,
  runTurns,
  type TurnsResult,
} from './agent/runTurns.js'
export type { SideEffectRecord, SideEffectStore } from './agent/SideEffectStore.js'
export {
  DEFAULT_SIDE_EFFECT_TTL_MS,
  type SideEffectOptions,
  sideEffect,
} from './agent/sideEffect.js'
export {
  type RepairableCall,
  type Repaired,
  type RepairOptions,
  type Validate,
  withRepair,
} from './agent/withRepair.js'
export { CostBudget, type CostBudgetOptions, type ModelPrice } from './budget/CostBudget.js'
export { estimatePromptTokens, MESSAGE_OVERHEAD_TOKENS } from './budget/estimatePromptTokens.js'
export type { AttemptRecord } from './call/AttemptRecord.js'
export type {
  CallLimits,
  CallModelOptions,
  MessageReducer,
  RecoveryOptions,
  RetryOptions,
} from './call/CallModelOptions.js'
export { callModel } from './call/callModel.js'
export type { ModelStream } from './call/ModelStream.js'
export { CONTINUE_PROMPT } from './call/recoverOutputLimit.js'
export { stripThinkingSignatures } from './call/stripThinkingSignatures.js'
export {
  type LlmAdmissionMessage,
  type LlmAttemptMessage,
  type LlmCooldownMessage,
  llmChannels,
} from './channels.js'
export type {
  BuiltRequest,
  Dialect,
  DialectName,
  ResponseMeta,
  StreamParser,
} from './dialects/Dialect.js'
export { dialects, isDialectName } from './dialects/dialects.js'
export type { ErrorInput, StreamErrorInput } from './dialects/ErrorInput.js'
export {
  type HeaderInput,
  retryAfterFromHeaders,
  shouldRetryHeader,
} from './dialects/errorHeaders.js'
export {
  type BudgetExceededDetails,
  BudgetExceededError,
  isBudgetExceeded,
} from './errors/BudgetExceededError.js'
export {
  ERROR_KIND_TABLE,
  ERROR_KINDS,
  type ErrorKind,
  type ErrorKindTraits,
  errorKindTraits,
  type LimitSignal,
  REQUEST_BOUND_KINDS,
  RETRYABLE_KINDS,
} from './errors/errorKinds.js'
export {
  INVALID_CHAT_REQUEST,
  InvalidChatRequestError,
  isInvalidChatRequest,
} from './errors/InvalidChatRequestError.js'
export {
  isKeysRetired,
  type KeysRetiredDetails,
  KeysRetiredError,
} from './errors/KeysRetiredError.js'
export { isMaxTurnsExceeded, MaxTurnsExceededError } from './errors/MaxTurnsExceededError.js'
export {
  isModelUnavailable,
  type ModelFailure,
  type ModelUnavailableDetails,
  ModelUnavailableError,
} from './errors/ModelUnavailableError.js'
export {
  isOutputTruncated,
  type OutputTruncatedDetails,
  OutputTruncatedError,
} from './errors/OutputTruncatedError.js'
export {
  isProviderError,
  ProviderError,
  type ProviderErrorDetails,
} from './errors/ProviderError.js'
export {
  isProviderReplyError,
  PROVIDER_REPLY,
  ProviderReplyError,
} from './errors/ProviderReplyError.js'
export {
  isRateLimited,
  type RateLimit,
  type RateLimitedDetails,
  RateLimitedError,
} from './errors/RateLimitedError.js'
export {
  isRepairFailed,
  type RepairFailedDetails,
  RepairFailedError,
} from './errors/RepairFailedError.js'
export {
  isRequestRejected,
  type RequestRejectedDetails,
  RequestRejectedError,
} from './errors/RequestRejectedError.js'
export {
  isSseBufferOverflow,
  SSE_BUFFER_OVERFLOW,
  SseBufferOverflowError,
} from './errors/SseBufferOverflowError.js'
export {
  isStreamInterrupted,
  type StreamInterruptedDetails,
  StreamInterruptedError,
} from './errors/StreamInterruptedError.js'
export { isUnknownPrice, UnknownPriceError } from './errors/UnknownPriceError.js'
export {
  clampAttempts,
  decideRetry,
  MAX_ATTEMPTS_CAP,
  type Priority,
  type RetryDecision,
  type RetryDecisionInput,
} from './retry/decideRetry.js'
export { defaultRetryBudgets, setDefaultRetryBudgets } from './retry/defaultRetryBudgets.js'
export type { ModelOutlook } from './retry/modelOutlook.js'
export { RetryBudget, type RetryBudgetOptions } from './retry/RetryBudget.js'
export { RetryBudgetRegistry } from './retry/RetryBudgetRegistry.js'
export {
  backoffMs,
  type DelaySource,
  type RandomSource,
  RETRY_DELAY_DEFAULTS,
  type RetryDelay,
  type RetryDelayInput,
  type RetryDelayOptions,
  retryDelay,
} from './retry/retryDelay.js'
export {
  decodeSse,
  type SseByteSource,
  SseDecoder,
  type SseDecoderOptions,
} from './sse/SseDecoder.js'
export type { SseComment, SseFrame, SseMessage } from './sse/SseFrame.js'
export type {
  ChatMessage,
  ChatRequest,
  ChatResponse,
  ContentBlock,
  FinishReason,
  NormalizedError,
  StreamEvent,
  TextBlock,
  ThinkingBlock,
  ToolCallBlock,
  ToolDefinition,
  ToolResultBlock,
  Usage,
} from './types.js'
