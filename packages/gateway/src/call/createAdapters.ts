import type { HourglassFetch } from '@hourglass/fetch'
import type { GatewayConfig, ModelTarget } from '../config/gatewayConfigSchema.js'
import { anthropic, gemini, type ModelAdapter, openAICompatible } from '../llm.js'

/** `provider` + NUL + `model`: config names cannot contain NUL, so keys never collide. */
export function targetKey(target: ModelTarget): string {
  return `${target.provider}\u0000${target.model}`
}

/**
 * One adapter per provider+model the config can route to, built once at
 * start. Each is named after its provider's config entry, so admission
 * cooldowns, retry budgets and RPM/TPM limits are per configured provider
 * (two entries for one vendor with different keys are two providers).
 */
export function createAdapters(
  config: GatewayConfig,
  fetch: HourglassFetch,
): Map<string, ModelAdapter> {
  const adapters = new Map<string, ModelAdapter>()
  for (const entry of Object.values(config.models)) {
    for (const target of entry.fallback ?? []) {
      const key = targetKey(target)
      if (adapters.has(key)) continue
      const provider = config.providers[target.provider]
      // Validation guarantees every target names a provider.
      if (provider === undefined) continue
      const options = {
        baseURL: provider.baseURL,
        apiKeys: provider.apiKeys,
        model: target.model,
        name: target.provider,
        fetch,
        ...(provider.headers === undefined ? {} : { headers: provider.headers }),
      }
      adapters.set(
        key,
        provider.dialect === 'anthropic'
          ? anthropic(options)
          : provider.dialect === 'gemini'
            ? gemini(options)
            : openAICompatible({ ...options, dialect: provider.dialect }),
      )
    }
  }
  return adapters
}
