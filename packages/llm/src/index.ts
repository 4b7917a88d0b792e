// The public API of @hourglass/llm: 55 runtime names, and the types a caller
// writes code against. Everything else is internal (import paths under src/
// are not part of the API). Errors are exported as types with an `isX()`
// guard each: check with the guard (it survives two copies of the package),
// never with `instanceof`.

// Text a terminal or client may be shown: a caller's values are escaped and cut by
// core's helpers (every package shows a value by one rule), re-exported as before.
export { cutText, escapeUnprintable, quoted } from '@hourglass/core'
// Adapters: one per provider + model
export { anthropic } from './adapters/anthropic.js'
// A config that holds a baseURL refuses it by the adapters' own rule.
export { baseURLProblem, type Wire } from './adapters/checkAdapterOptions.js'
export { type BodyHook, createAdapter } from './adapters/createAdapter.js'
export { gemini } from './adapters/gemini.js'
export type {
  AdapterOptions,
  ModelAdapter,
  OpenResult,
  PreparedRequest,
  SendOptions,
  SendResult,
} from './adapters/ModelAdapter.js'
export { type OpenAICompatibleOptions, openAICompatible } from './adapters/openAICompatible.js'
// Admission: cooldowns, RPM/TPM limits, latencies — shared by every call
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
export { keyId } from './admission/keyId.js'
export {
  MemoryCooldownStore,
  type MemoryCooldownStoreOptions,
} from './admission/MemoryCooldownStore.js'
export {
  MAX_LIMIT_WINDOW_MS,
  type ProviderLimit,
  ProviderLimits,
  type ProviderLimitsOptions,
  type RedisLimitClient,
} from './admission/ProviderLimits.js'
export {
  RedisCooldownStore,
  type RedisCooldownStoreOptions,
  type RedisScriptClient,
} from './admission/RedisCooldownStore.js'
export type { AdmissionFailure, AdmissionOutcome } from './admission/slot.js'
// Agents: turns, side effects, repair, idempotency keys
export { idempotencyKey } from './agent/idempotencyKey.js'
export {
  MemorySideEffectStore,
  type MemorySideEffectStoreOptions,
} from './agent/MemorySideEffectStore.js'
export {
  type AgentTool,
  type AgentToolContext,
  type RunTurnsOptions,
  runTurns,
  type TurnsResult,
} from './agent/runTurns.js'
export type { SideEffectRecord, SideEffectStore } from './agent/SideEffectStore.js'
export { type SideEffectOptions, sideEffect } from './agent/sideEffect.js'
export {
  type RepairableCall,
  type Repaired,
  type RepairOptions,
  type Validate,
  withRepair,
} from './agent/withRepair.js'
// Cost
export {
  CostBudget,
  type CostBudgetOptions,
  type CostReservation,
  type LongContextPrice,
  type ModelPrice,
  type TierPrice,
} from './budget/CostBudget.js'
export { estimatePromptTokens } from './budget/estimatePromptTokens.js'
export type { AttemptRecord } from './call/AttemptRecord.js'
export type {
  CallLimits,
  CallModelOptions,
  MessageReducer,
  RecoveryOptions,
  RetryOptions,
} from './call/CallModelOptions.js'
// The call
export { callModel } from './call/callModel.js'
export type { ModelStream } from './call/ModelStream.js'
// Diagnostics channels
export {
  type LlmAdmissionMessage,
  type LlmAttemptMessage,
  type LlmCooldownMessage,
  type LlmRequestParams,
  type LlmRetrySkippedMessage,
  llmChannels,
} from './channels.js'
// Provider dialects and SSE
export type { Dialect, DialectName } from './dialects/Dialect.js'
// A dialect's request id among a response's headers (`requestIdHeader` is one name or a list).
export { readRequestId } from './dialects/Dialect.js'
export { dialects } from './dialects/dialects.js'
export { looksLikeWebPage } from './dialects/looksLikeWebPage.js'
// Which assistant turns of OpenAI-shaped messages are a tool loop's (DeepSeek wants their thinking back).
export { toolLoopTurns } from './dialects/toolLoopTurns.js'
// Whether a parser marked a tool call (a block, a stream event) unfinished:
// the gateway answers such a call as the model sent it (no `{}` of ours).
export { isMarkedUnfinished as markedUnfinished } from './dialects/unfinishedCall.js'
export {
  type BudgetExceededError,
  isBudgetExceeded,
} from './errors/BudgetExceededError.js'
// Errors: the kinds, then one guard per error
export {
  ERROR_KIND_TABLE,
  ERROR_KINDS,
  type ErrorKind,
  type ErrorKindTraits,
  type LimitSignal,
  REQUEST_BOUND_KINDS,
  type StopKind,
} from './errors/errorKinds.js'
export {
  type InvalidChatRequestError,
  isInvalidChatRequest,
} from './errors/InvalidChatRequestError.js'
export { isKeysRetired, type KeysRetiredError } from './errors/KeysRetiredError.js'
export { isMaxTurnsExceeded, type MaxTurnsExceededError } from './errors/MaxTurnsExceededError.js'
export type { ModelFailure } from './errors/ModelFailure.js'
export { isModelUnavailable, type ModelUnavailableError } from './errors/ModelUnavailableError.js'
export { isOutputTruncated, type OutputTruncatedError } from './errors/OutputTruncatedError.js'
export { isProviderError, type ProviderError } from './errors/ProviderError.js'
export { isProviderReplyError, type ProviderReplyError } from './errors/ProviderReplyError.js'
export {
  isRateLimited,
  type RateLimit,
  type RateLimitedError,
  type RateLimitedKind,
} from './errors/RateLimitedError.js'
export { isRepairFailed, type RepairFailedError } from './errors/RepairFailedError.js'
export { isRequestRejected, type RequestRejectedError } from './errors/RequestRejectedError.js'
export {
  isResponseTooLarge,
  type ResponseTooLargeError,
} from './errors/ResponseTooLargeError.js'
export {
  isSideEffectStoreError,
  type SideEffectStoreError,
} from './errors/SideEffectStoreError.js'
// The gateway's SSE re-cutter raises the decoder's overflow error: the class is public.
export { isSseBufferOverflow, SseBufferOverflowError } from './errors/SseBufferOverflowError.js'
// Public: a store of one's own may throw it to say it did not answer (silence, not a refusal).
export { isStoreTimeout, StoreTimeoutError } from './errors/StoreTimeoutError.js'
export {
  isStreamInterrupted,
  type StreamInterruptedError,
} from './errors/StreamInterruptedError.js'
export { isUnknownPrice, type UnknownPriceError } from './errors/UnknownPriceError.js'
// Retry: the decision, the waits, the per-provider budgets
export { decideRetry, type Priority, type RetryDecision } from './retry/decideRetry.js'
export { defaultRetryBudgets, setDefaultRetryBudgets } from './retry/defaultRetryBudgets.js'
export { DEFAULT_MAX_RETRY_AFTER_MS } from './retry/maxRetryAfter.js'
export type { RetryBudget, RetryBudgetOptions } from './retry/RetryBudget.js'
export { RetryBudgetRegistry } from './retry/RetryBudgetRegistry.js'
export { type RetryDelay, type RetryDelayOptions, retryDelay } from './retry/retryDelay.js'
export {
  decodeSse,
  type SseByteSource,
  SseDecoder,
  type SseDecoderOptions,
} from './sse/SseDecoder.js'
export type { SseComment, SseFrame, SseMessage } from './sse/SseFrame.js'
// Text: a provider's words as a terminal or client may be shown them
export { MAX_PROVIDER_TEXT_CHARS, providerText } from './text/providerText.js'
export type {
  Annotation,
  ChatMessage,
  ChatRequest,
  ChatResponse,
  ContentBlock,
  CooldownScope,
  FinishReason,
  Logprobs,
  NormalizedError,
  OverLimit,
  RateLimitedBy,
  StreamEvent,
  TextBlock,
  ThinkingBlock,
  ToolCallBlock,
  ToolDefinition,
  ToolResultBlock,
  Usage,
} from './types.js'
