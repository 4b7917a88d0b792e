export {
  type ConfigProblem,
  GatewayConfigError,
  isGatewayConfigError,
} from './config/GatewayConfigError.js'
export type {
  GatewayConfig,
  GatewayConfigInput,
  ModelTarget,
  ProviderConfig,
} from './config/gatewayConfigSchema.js'
export { loadGatewayConfig } from './config/loadGatewayConfig.js'
export { type ParseGatewayConfigOptions, parseGatewayConfig } from './config/parseGatewayConfig.js'
export {
  createGateway,
  DEFAULT_REPLY_RESERVE_MS,
  type GatewayOptions,
  type GatewayRouter,
} from './createGateway.js'
export { type ErrorReply, errorReply } from './http/errorReply.js'
export { GatewayRequestError, isGatewayRequestError } from './http/GatewayRequestError.js'
export type { RedisState } from './http/health.js'
export type { DrainReport } from './http/RequestTracker.js'
export type { GatewayRedisClient } from './limits/GatewayRedisClient.js'
export type { GatewayLogger, LogLevel, LogRecord } from './log/GatewayLogger.js'
export { OpenAIChunkEncoder, toOpenAIError, toOpenAIResponse } from './openai/encode.js'
export { type ResolvedModel, resolveModel } from './routing/resolveModel.js'
export { SseRecutter, type SseRecutterOptions } from './sse/SseRecutter.js'
export {
  DEFAULT_KEEP_ALIVE_TIMEOUT_MS,
  type RunningGateway,
  type StartGatewayOptions,
  startGateway,
} from './startGateway.js'
