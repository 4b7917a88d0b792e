/**
 * Everything the gateway takes from @hourglass/llm, in one place.
 *
 * INTERIM: @hourglass/llm's `index.ts` is still a placeholder while `callModel`
 * lands, so these re-export its sources by relative path. When the package
 * exports them, this file becomes `export { … } from '@hourglass/llm'` and
 * nothing else in the gateway changes.
 */
export {
  Admission,
  type AdmissionOptions,
  isKeysRetired,
  RedisCooldownStore,
} from '../../llm/src/admission/index.js'
export type { AttemptRecord } from '../../llm/src/call/AttemptRecord.js'
export { anthropic } from '../../llm/src/call/anthropic.js'
export { callModel } from '../../llm/src/call/callModel.js'
export { gemini } from '../../llm/src/call/gemini.js'
export type {
  ModelAdapter,
  OpenResult,
  SendOptions,
  SendResult,
} from '../../llm/src/call/ModelAdapter.js'
export type { ModelStream } from '../../llm/src/call/ModelStream.js'
export { openAICompatible } from '../../llm/src/call/openAICompatible.js'
export { isProviderError, ProviderError } from '../../llm/src/call/ProviderError.js'
export { isRequestRejected } from '../../llm/src/call/RequestRejectedError.js'
export type { DialectName } from '../../llm/src/dialects/Dialect.js'
export { isInvalidChatRequest } from '../../llm/src/dialects/InvalidChatRequestError.js'
export {
  OPENAI_SSE_DONE,
  OpenAIChunkEncoder,
  openAISseData,
  toOpenAIError,
  toOpenAIResponse,
} from '../../llm/src/dialects/openaiEncode.js'
export { parseOpenAIRequest } from '../../llm/src/dialects/openaiInbound.js'
export { isProviderReplyError } from '../../llm/src/dialects/ProviderReplyError.js'
export {
  CostBudget,
  estimatePromptTokens,
  isBudgetExceeded,
  isModelUnavailable,
  isRateLimited,
  isStreamInterrupted,
  type ModelPrice,
  type Priority,
  RetryBudgetRegistry,
} from '../../llm/src/policy/index.js'
export { SseRecutter } from '../../llm/src/sse/SseRecutter.js'
export type {
  ChatRequest,
  ChatResponse,
  ErrorKind,
  NormalizedError,
  StreamEvent,
} from '../../llm/src/types.js'
