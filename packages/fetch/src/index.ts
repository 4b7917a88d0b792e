export { retryAfterMs } from '@hourglass/core'
export type { AttemptTimings } from './Attempt.js'
export type { FetchInput } from './adoptRequest.js'
export {
  type EgressAttemptEndMessage,
  type EgressAttemptMessage,
  type EgressRetryMessage,
  type EgressRetrySkippedMessage,
  fetchChannels,
} from './channels.js'
export { type ConnectorOptions, createConnector } from './createConnector.js'
export {
  type CreateFetchOptions,
  createFetch,
  type HourglassFetch,
  type HourglassRequestInit,
} from './createFetch.js'
export { type DeadlineDispatchOptions, deadlineInterceptor } from './deadlineInterceptor.js'
export { BodyTimeoutError, isBodyTimeout } from './errors/BodyTimeoutError.js'
export { ConnectError, FAST_CONNECT_FAILURE_MS, isConnectError } from './errors/ConnectError.js'
export { ConnectTimeoutError, isConnectTimeout } from './errors/ConnectTimeoutError.js'
export { DnsError, isDnsError } from './errors/DnsError.js'
export { DnsTimeoutError, isDnsTimeout } from './errors/DnsTimeoutError.js'
export { EgressError, type EgressErrorDetails, type EgressPhase } from './errors/EgressError.js'
export { HeadersTimeoutError, isHeadersTimeout } from './errors/HeadersTimeoutError.js'
export { isProbeNoSample, ProbeNoSampleError } from './errors/ProbeNoSampleError.js'
export { isProbeRedirect, ProbeRedirectError } from './errors/ProbeRedirectError.js'
export {
  isRedirectWithStreamBody,
  RedirectWithStreamBodyError,
} from './errors/RedirectWithStreamBodyError.js'
export { isTooManyRedirects, TooManyRedirectsError } from './errors/TooManyRedirectsError.js'
export {
  isUnexpectedRedirect,
  UnexpectedRedirectError,
} from './errors/UnexpectedRedirectError.js'
export { isUrlRefused, type UrlRefusal, UrlRefusedError } from './errors/UrlRefusedError.js'
export type { EgressOptions, EmptyReadRetry, LookupFunction, RetryOptions } from './options.js'
export {
  type PhaseStats,
  type ProbeOptions,
  type ProbeResult,
  type ProbeSample,
  probe,
} from './probe.js'
export {
  type SuggestedSetting,
  type SuggestedTimeouts,
  type SuggestionCut,
  type SuggestOptions,
  suggestTimeouts,
} from './suggestTimeouts.js'
