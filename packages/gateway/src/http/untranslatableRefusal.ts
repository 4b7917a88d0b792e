import type { ModelTarget } from '../config/gatewayConfigSchema.js'
import type { InvalidChatRequestError } from '../llm.js'
import { GatewayRequestError } from './GatewayRequestError.js'

/**
 * The 400 for a request a provider of the fallback list cannot be sent
 * without dropping or changing something the client set: `unsupported_field`,
 * `param` the field, the message naming the provider, its dialect and model,
 * and what the client can do. One builder for both places it is found — up
 * front, and at a fallback reached later that refuses a value only it
 * refuses (`reachedLate`) — so the client reads the same refusal either way:
 * reached late, it got llm's bare message and `invalid_request`, naming
 * neither the provider nor what to do.
 */
export function untranslatableRefusal(
  error: InvalidChatRequestError,
  target: ModelTarget,
  dialect: string,
  options: { capField: CapField | undefined; reachedLate: boolean },
): GatewayRequestError {
  // Reached late, the models before it did not answer (failed, or were
  // skipped): the same request may be answered once they do, which the
  // client cannot tell from a 400 alone.
  const late = options.reachedLate
    ? ', reached as a fallback: the models before it did not answer'
    : ''
  // The cap refused (llm names it `max_tokens`, Anthropic's word) is named
  // as the client sent it: `max_completion_tokens` from the official
  // clients, whose `param` pointed at a field the request did not have.
  const cap = error.field === 'max_tokens' ? (options.capField ?? 'max_tokens') : undefined
  const param = cap ?? error.field
  const problem =
    cap !== undefined && error.message.startsWith(`${error.field}: `)
      ? `${cap}: ${error.message.slice(error.field.length + 2)}`
      : error.message
  return new GatewayRequestError(
    {
      status: 400,
      errorCode: 'unsupported_field',
      param,
      message: `${problem} (provider "${target.provider}", dialect ${dialect}, for model "${target.model}"${late}); ${advice(param, error.reason, options.capField)}`,
    },
    { cause: error },
  )
}

/** The output cap field a client sent: the official clients' current one, or the older one. */
export type CapField = 'max_completion_tokens' | 'max_tokens'

function advice(field: string, reason: string | undefined, capField: CapField | undefined): string {
  // A prefill is no field to remove: the refusal already says what to send.
  if (field === 'messages') return 'or route the model elsewhere'
  // Half an emoji is a character cut inside the field's text, not a field
  // to remove: the whole character goes.
  if (reason === 'lone_surrogate') {
    return 'send the whole character (both halves of the surrogate pair) or route the model elsewhere'
  }
  if (field !== 'max_tokens' && field !== 'max_completion_tokens') {
    return 'remove the field or route the model elsewhere'
  }
  const raise = `send a ${field} above it, a lower reasoning_effort, or route the model elsewhere`
  return capField !== undefined
    ? raise
    : `the request sent no max_tokens, so the gateway's policy.defaultMaxTokens was used: ${raise}`
}
