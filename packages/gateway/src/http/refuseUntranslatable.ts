// `dialects` is imported here, not through ../llm.js, until that file re-exports it.

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
 */
export function refuseUntranslatable(
  config: GatewayConfig,
  targets: readonly ModelTarget[],
  request: ChatRequest,
): void {
  for (const target of targets) {
    const provider = config.providers[target.provider]
    if (provider === undefined) continue
    const dialect = dialects[provider.dialect]
    // The OpenAI-compatible dialects forward whatever the schema accepts:
    // only a translating dialect can refuse, so only those are asked; the
    // compatible providers' own known refusals are below.
    if (dialect.wire === 'openai') {
      const refused = OPENAI_COMPATIBLE_REFUSALS[provider.dialect]?.(request)
      if (refused !== undefined) {
        throw unsupported(
          target,
          provider.dialect,
          refused.field,
          `${refused.field}: ${refused.problem}`,
        )
      }
      continue
    }
    try {
      dialect.buildRequest(request, target.model)
    } catch (error) {
      if (!isInvalidChatRequest(error)) throw error
      throw unsupported(target, provider.dialect, error.field, error.message)
    }
  }
}

function unsupported(
  target: ModelTarget,
  dialect: string,
  field: string,
  message: string,
): GatewayRequestError {
  return new GatewayRequestError({
    status: 400,
    errorCode: 'unsupported_field',
    param: field,
    message: `${message} (provider "${target.provider}", dialect ${dialect}, for model "${target.model}"); remove the field or route the model elsewhere`,
  })
}

/**
 * What an OpenAI-compatible provider refuses of what the schema accepts and
 * its dialect forwards as sent: the provider's own 400 for the whole request,
 * after a round trip (and a fallback's worth of time), without naming the
 * provider. Kept to refusals a provider documents or always answers.
 */
const OPENAI_COMPATIBLE_REFUSALS: Partial<
  Record<
    keyof typeof dialects,
    (request: ChatRequest) => { field: string; problem: string } | undefined
  >
> = {
  // DeepSeek's Chat Completions take `text` and `json_object` (JSON mode)
  // only: `json_schema` is refused, "This response_format type is
  // unavailable now" (400; 422 from older deployments).
  deepseek: (request) => {
    const format = request.extra?.['response_format'] as { type?: unknown } | undefined
    if (format?.type !== 'json_schema') return undefined
    return {
      field: 'response_format.type',
      problem:
        '"json_schema" is refused by DeepSeek, which has no structured outputs; type "json_object" (JSON mode, the schema described in the prompt) is accepted',
    }
  },
}
