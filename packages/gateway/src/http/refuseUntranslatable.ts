import type { GatewayConfig, ModelTarget } from '../config/gatewayConfigSchema.js'
import type { ChatRequest } from '../llm.js'
import { dialects, isInvalidChatRequest } from '../llm.js'
import { GatewayRequestError } from './GatewayRequestError.js'

/**
 * Refuses, before anything is sent, a request that a provider of the
 * fallback list could not be sent without dropping or changing something the
 * client set (`seed` to Anthropic, `logit_bias` to Gemini, a message `name`,
 * tool-call arguments that are not a JSON object…): 400 naming the field and
 * the provider. The dialect's own request builder decides, so the refusal
 * and the translation cannot disagree. Checked for the whole list, since a
 * fallback may reach any of them.
 *
 * A `max_tokens` refused (Anthropic's thinking budget for `reasoning_effort`
 * must be below it) is not a field to remove: the answer says to raise it,
 * and, when the client sent none, that the value refused is the gateway's
 * `policy.defaultMaxTokens`, which the client never saw.
 */
export function refuseUntranslatable(
  config: GatewayConfig,
  targets: readonly ModelTarget[],
  request: ChatRequest,
  maxTokensSent = true,
): void {
  for (const [i, target] of targets.entries()) {
    const provider = config.providers[target.provider]
    if (provider === undefined) continue
    const dialect = dialects[provider.dialect]
    // The OpenAI-compatible dialects forward whatever the schema accepts,
    // but for what their provider refuses of it (DeepSeek's json_schema):
    // they are asked that alone (`refuseFields`), nothing built.
    if (dialect.wire === 'openai' && dialect.refuseFields === undefined) continue
    try {
      if (dialect.wire === 'openai') dialect.refuseFields?.(request)
      else dialect.buildRequest(request, target.model)
    } catch (error) {
      if (!isInvalidChatRequest(error)) throw error
      // A value only this provider refuses (an email as the end-user id,
      // for Anthropic): refused when it is asked first; as a fallback it is
      // left to refuse the value if reached — checked for the whole list,
      // every request with an email failed once Anthropic was added behind
      // an OpenAI primary that takes it.
      if (error.reason === 'provider_value' && i > 0) continue
      throw new GatewayRequestError({
        status: 400,
        errorCode: 'unsupported_field',
        param: error.field,
        message: `${error.message} (provider "${target.provider}", dialect ${provider.dialect}, for model "${target.model}"); ${advice(error.field, error.reason, maxTokensSent)}`,
      })
    }
  }
}

function advice(field: string, reason: string | undefined, maxTokensSent: boolean): string {
  // A prefill is no field to remove: the refusal already says what to send.
  if (field === 'messages') return 'or route the model elsewhere'
  // Half an emoji is a character cut inside the field's text, not a field
  // to remove: the whole character goes.
  if (reason === 'lone_surrogate') {
    return 'send the whole character (both halves of the surrogate pair) or route the model elsewhere'
  }
  if (field !== 'max_tokens') return 'remove the field or route the model elsewhere'
  const raise = 'send a max_tokens above it, a lower reasoning_effort, or route the model elsewhere'
  return maxTokensSent
    ? raise
    : `the request sent no max_tokens, so the gateway's policy.defaultMaxTokens was used: ${raise}`
}
