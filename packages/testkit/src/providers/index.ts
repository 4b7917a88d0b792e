export { anthropicErrors } from './errors/anthropicErrors.js'
export { deepseekErrors } from './errors/deepseekErrors.js'
export { doubaoErrors } from './errors/doubaoErrors.js'
export {
  ERNIE_ERROR_CODES,
  ERNIE_V2_RATE_LIMITS,
  ERNIE_V2_REFUSALS,
  ernieErrors,
} from './errors/ernieErrors.js'
export { geminiErrors } from './errors/geminiErrors.js'
export { openAIErrors } from './errors/openAIErrors.js'
export {
  QWEN_THROTTLING_MESSAGES,
  type QwenThrottlingCode,
  qwenErrors,
} from './errors/qwenErrors.js'
export { FakeProvider, type FakeProviderOptions, startFakeProvider } from './FakeProvider.js'
export { reply } from './reply.js'
export { splitTokens } from './splitTokens.js'
export type {
  ErrorReply,
  HangReply,
  Pacing,
  ProviderDialect,
  ProviderReply,
  ProviderRoute,
  RecordedRequest,
  ReplyScript,
  RequestOutcome,
  ScriptedStreamError,
  ScriptedToolCall,
  TextReply,
} from './types.js'
