import type { ModelAdapter } from '../adapters/ModelAdapter.js'
import { callHook } from '../callHook.js'
import { type LlmAttemptMessage, llmChannels } from '../channels.js'
import type { ChatRequest } from '../types.js'
import { requestParamsOf, serverOf } from './attemptTarget.js'

/**
 * What `onAttempt` receives after every attempt: the `hourglass:llm:attempt`
 * message plus the policy's reason for its decision, in words.
 */
export interface AttemptRecord extends LlmAttemptMessage {
  /** Why the policy decided what it did (`"rate_limited (HTTP 429): retry 2 of 3 after 1210 ms (backoff)"`). */
  reason?: string | undefined
  /**
   * The provider's own message, for an attempt it answered with an error
   * (`"Overloaded"`, `"The server had an error while processing your
   * request."`): as its dialect read it, cut to 500 characters, never
   * request headers or keys. Not published on the channel.
   */
  providerMessage?: string | undefined
}

/**
 * Hands the record to `onAttempt` and publishes it (without `reason`) when
 * someone listens, with `startedAt` (the message's only: a record compared
 * whole in a caller's test stays as it was). `sentTo`, for an attempt that was sent: the adapter and
 * the request, read for the message's server and request parameters only
 * while someone listens (nothing per attempt otherwise).
 */
export function reportAttempt(
  record: AttemptRecord,
  onAttempt: ((record: AttemptRecord) => void) | undefined,
  sentTo?: { adapter: ModelAdapter; request: ChatRequest } | undefined,
  startedAt?: number | undefined,
): void {
  llmChannels.attempt.publish(() => {
    const { reason: _reason, providerMessage: _providerMessage, ...message } = record
    if (startedAt !== undefined) message.startedAt = startedAt
    if (sentTo !== undefined && record.sent !== false) {
      Object.assign(message, serverOf(sentTo.adapter))
      message.request = requestParamsOf(sentTo.request)
      message.dialect = sentTo.adapter.dialect.name
      if (sentTo.request.stream === true) message.stream = true
    }
    return message satisfies LlmAttemptMessage
  })
  // A logging hook must not change the outcome of a model call: what it
  // throws, or a promise it returns that rejects, is ignored.
  callHook(onAttempt, record)
}
