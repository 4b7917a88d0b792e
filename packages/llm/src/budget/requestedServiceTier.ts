import type { ChatRequest } from '../types.js'

/**
 * The service tier `request` asks for: `extra.service_tier` (OpenAI's
 * `auto`, `default`, `flex`, `scale`, `priority`; Anthropic's `auto`,
 * `standard_only`), when it is a string; else `undefined` — which OpenAI
 * reads as `auto`, the tier the project is configured for. @internal
 */
export function requestedServiceTier(request: Pick<ChatRequest, 'extra'>): string | undefined {
  const tier = request.extra?.['service_tier']
  return typeof tier === 'string' ? tier : undefined
}
