export type { AttemptRecord } from './AttemptRecord.js'
export { anthropic } from './anthropic.js'
export type { CallModelOptions, MessageReducer } from './CallModelOptions.js'
export { callModel } from './callModel.js'
export { type BodyHook, createAdapter } from './createAdapter.js'
export { gemini } from './gemini.js'
export { isMaxTurnsExceeded, MaxTurnsExceededError } from './MaxTurnsExceededError.js'
export type {
  AdapterOptions,
  ModelAdapter,
  OpenResult,
  SendOptions,
  SendResult,
} from './ModelAdapter.js'
export type { ModelStream } from './ModelStream.js'
export {
  isOutputTruncated,
  type OutputTruncatedDetails,
  OutputTruncatedError,
} from './OutputTruncatedError.js'
export { type OpenAICompatibleOptions, openAICompatible } from './openAICompatible.js'
export { isProviderError, ProviderError, type ProviderErrorDetails } from './ProviderError.js'
export {
  isRequestRejected,
  type RequestRejectedDetails,
  RequestRejectedError,
} from './RequestRejectedError.js'
export { CONTINUE_PROMPT } from './recoverOutputLimit.js'
export {
  type AgentTool,
  type RunTurnsOptions,
  runTurns,
  type TurnsResult,
} from './runTurns.js'
