import type { GatewayConfig, ModelTarget } from '../config/gatewayConfigSchema.js'
import type { ChatRequest } from '../llm.js'
import { dialects, isInvalidChatRequest } from '../llm.js'
import { type CapField, untranslatableRefusal } from './untranslatableRefusal.js'

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
 * `policy.defaultMaxTokens`, which the client never saw; sent, it is named
 * as the client wrote it (`capField`: `max_completion_tokens` or `max_tokens`).
 */
export function refuseUntranslatable(
  config: GatewayConfig,
  targets: readonly ModelTarget[],
  request: ChatRequest,
  capField: CapField | undefined,
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
      // an OpenAI primary that takes it. Reached, its refusal is answered
      // as this one (`refusedWhenReached`).
      if (error.reason === 'provider_value' && i > 0) continue
      throw untranslatableRefusal(error, target, provider.dialect, {
        capField,
        reachedLate: false,
      })
    }
  }
}
