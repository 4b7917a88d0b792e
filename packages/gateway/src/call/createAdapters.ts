import type { HourglassFetch } from '@hourglass/fetch'
import { type ConfigProblem, GatewayConfigError } from '../config/GatewayConfigError.js'
import type { GatewayConfig, ModelTarget } from '../config/gatewayConfigSchema.js'
import { anthropic, gemini, type ModelAdapter, openAICompatible } from '../llm.js'
import { withHeadersTimeout } from './withHeadersTimeout.js'

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
  // What an adapter refuses (llm's own check: a header undici will not send,
  // such as transfer-encoding) is reported like the schema's problems, once
  // per provider, all at once.
  const problems = new Map<string, ConfigProblem>()
  // One fetch per provider with its own `headersTimeoutMs`, shared by its models.
  const fetches = new Map<string, HourglassFetch>()
  const fetchFor = (name: string, headersTimeoutMs: number | undefined): HourglassFetch => {
    if (headersTimeoutMs === undefined) return fetch
    let own = fetches.get(name)
    if (own === undefined) {
      own = withHeadersTimeout(fetch, headersTimeoutMs)
      fetches.set(name, own)
    }
    return own
  }
  for (const entry of Object.values(config.models)) {
    for (const target of entry.fallback ?? []) {
      const key = targetKey(target)
      if (adapters.has(key) || problems.has(target.provider)) continue
      const provider = config.providers[target.provider]
      // Validation guarantees every target names a provider.
      if (provider === undefined) continue
      const options = {
        baseURL: provider.baseURL,
        apiKeys: provider.apiKeys,
        model: target.model,
        name: target.provider,
        fetch: fetchFor(target.provider, provider.headersTimeoutMs),
        ...(provider.headers === undefined ? {} : { headers: provider.headers }),
        ...(provider.maxResponseBytes === undefined
          ? {}
          : { maxResponseBytes: provider.maxResponseBytes }),
        ...(provider.maxStreamBytes === undefined
          ? {}
          : { maxStreamBytes: provider.maxStreamBytes }),
      }
      try {
        adapters.set(
          key,
          provider.dialect === 'anthropic'
            ? anthropic(options)
            : provider.dialect === 'gemini'
              ? gemini(options)
              : openAICompatible({ ...options, dialect: provider.dialect }),
        )
      } catch (error) {
        if (!(error instanceof TypeError)) throw error
        // "openai adapter: headers["te"] cannot be set: …" → the field and its rule.
        const [, option = '', rule = error.message] =
          /^[^:]*adapter: ([\w-]+(?:\[[^\]]*\])?) (.*)$/s.exec(error.message) ?? []
        const field = `providers.${target.provider}${option === '' ? '' : `.${option.replace(/^headers\["(.*)"\]$/, 'headers.$1')}`}`
        problems.set(target.provider, { field, message: rule })
      }
    }
  }
  if (problems.size > 0) throw new GatewayConfigError([...problems.values()])
  return adapters
}
