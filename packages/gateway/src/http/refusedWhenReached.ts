import type { GatewayConfig, ModelTarget } from '../config/gatewayConfigSchema.js'
import { isInvalidChatRequest } from '../llm.js'
import { type CapField, untranslatableRefusal } from './untranslatableRefusal.js'

/**
 * What a call that failed is answered as when the model it ended on could
 * not be sent the request: a fallback reached after the models before it
 * did not answer, refusing a value only its provider refuses (an email as
 * Anthropic's end-user id, an MCP tool name for Gemini: `refuseUntranslatable`
 * leaves those to the fallback), nothing sent to it. llm's refusal names the
 * field only; the client gets the gateway's up-front refusal instead, naming
 * the provider and what to do. `last` is the last attempt's provider and
 * model (the request line's `provider` and `upstreamModel`): the one whose
 * request builder refused. Any other error is returned as it is.
 */
export function refusedWhenReached(
  config: GatewayConfig,
  targets: readonly ModelTarget[],
  last: { provider?: unknown; upstreamModel?: unknown },
  error: unknown,
  capField: CapField | undefined,
): unknown {
  if (!isInvalidChatRequest(error) || last.provider === undefined) return error
  const i = targets.findIndex((t) => t.provider === last.provider && t.model === last.upstreamModel)
  const target = targets[i]
  const provider = target === undefined ? undefined : config.providers[target.provider]
  if (target === undefined || provider === undefined) return error
  return untranslatableRefusal(error, target, provider.dialect, {
    capField,
    reachedLate: i > 0,
  })
}
