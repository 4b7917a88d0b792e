// `dialects` is imported here, not through ../llm.js, until that file re-exports it.

import type { GatewayConfig, ModelTarget } from '../config/gatewayConfigSchema.js'
import type { ChatRequest } from '../llm.js'
import { dialects, isInvalidChatRequest } from '../llm.js'
import { GatewayRequestError } from './GatewayRequestError.js'

/**
 * Refuses, before anything is sent, a request that a provider of the
 * fallback list could not be sent without dropping a field the client set
 * (`seed` to Anthropic, `logit_bias` to Gemini…): 400 naming the field and
 * the provider. The dialect's own request builder decides, so the refusal
 * and the translation cannot disagree. Checked for the whole list, since a
 * fallback may reach any of them.
 */
export function refuseUntranslatable(
  config: GatewayConfig,
  targets: readonly ModelTarget[],
  request: ChatRequest,
): void {
  // Only extra fields and strict tools can be untranslatable: skip the work otherwise.
  if (request.extra === undefined && request.tools?.some((t) => t.strict === true) !== true) return
  for (const target of targets) {
    const provider = config.providers[target.provider]
    if (provider === undefined) continue
    try {
      dialects[provider.dialect].buildRequest(request, target.model)
    } catch (error) {
      if (!isInvalidChatRequest(error)) throw error
      throw new GatewayRequestError({
        status: 400,
        errorCode: 'unsupported_field',
        param: error.field,
        message: `${error.message} (provider "${target.provider}", dialect ${provider.dialect}, for model "${target.model}"); remove the field or route the model elsewhere`,
      })
    }
  }
}
