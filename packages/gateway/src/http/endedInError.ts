import { providerText } from '../llm.js'
import { GatewayRequestError } from './GatewayRequestError.js'

/** A finish reason is a short code; past this it is no code, and cut. */
const MAX_FINISH_REASON_CHARS = 100

/**
 * A provider's answer that ended in an error (llm's finish reason `error`:
 * DeepSeek's `insufficient_system_resource`, generation cut short for lack
 * of capacity; Gemini's `MALFORMED_FUNCTION_CALL`, `UNEXPECTED_TOOL_CALL`,
 * `TOO_MANY_TOOL_CALLS`). OpenAI's finish reasons have no word for it, and
 * passed on as `stop` the client took a cut or empty answer for a whole
 * one. A failure instead, which a retry may mend: 502 `upstream_error`
 * before anything is written, a stream's error event
 * (`stream_interrupted`, no `[DONE]`) after its first event. llm already
 * treats such an answer of which the caller got nothing (a whole answer, a
 * stream before its first token) as a failed attempt, retried and handed
 * to the fallbacks: what reaches here is a stream that ended so after its
 * tokens, kept as a guard for any answer that still does.
 *
 * `providerFinishReason` is the provider's own word for it (llm's
 * `providerFinishReason`): a code, no free text, named in the message so
 * the client can tell a capacity cut, which a retry may mend, from a
 * malformed tool call, which its tools may need changing for.
 */
export function endedInError(
  answeredBy: string | undefined,
  afterFirstEvent: boolean,
  providerFinishReason?: string | undefined,
): GatewayRequestError {
  const who = answeredBy === undefined ? 'the provider' : answeredBy
  const reason =
    providerFinishReason === undefined
      ? ''
      : providerText(providerFinishReason, MAX_FINISH_REASON_CHARS, '')
  const why =
    reason === ''
      ? 'cut short by the provider, or a malformed tool call'
      : `finish reason ${JSON.stringify(reason)}`
  return new GatewayRequestError({
    status: 502,
    type: 'server_error',
    errorCode: afterFirstEvent ? 'stream_interrupted' : 'upstream_error',
    message: `${who}: the answer ended in an error (${why}); not a complete answer`,
    retryable: true,
  })
}
