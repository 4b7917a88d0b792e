import { isProviderLimited, type ProviderLimits } from '../limits/index.js'
import {
  type ChatRequest,
  estimatePromptTokens,
  type ModelAdapter,
  ProviderError,
  type SendOptions,
} from '../llm.js'

/**
 * An adapter that takes its provider's RPM/TPM share before every attempt.
 * A limit that resets in time (leaving the time the provider usually needs)
 * is waited for; one that does not becomes a `rate_limited` failure of this
 * attempt without sending anything, so the policy falls back to the next
 * provider instead of queueing past the deadline. A request larger than the
 * whole TPM limit is a non-retryable failure (never sent; the next provider
 * may take it).
 */
export function limitedAdapter(
  adapter: ModelAdapter,
  limits: ProviderLimits,
  neededMs: () => number,
): ModelAdapter {
  const take = async (
    request: ChatRequest,
    options: SendOptions,
  ): Promise<ProviderError | undefined> => {
    const tokens = estimatePromptTokens(request) + request.maxTokens
    try {
      await limits.acquire(adapter.name, tokens, {
        deadline: options.deadline,
        signal: options.signal,
        neededMs: neededMs(),
      })
      return undefined
    } catch (error) {
      if (!isProviderLimited(error)) throw error
      const finite = Number.isFinite(error.retryAfterMs)
      return new ProviderError({
        provider: adapter.name,
        model: adapter.model,
        error: finite
          ? {
              kind: 'rate_limited',
              retryable: true,
              status: 429,
              providerCode: `gateway_${error.limit}_limit`,
              message: `gateway ${error.limit.toUpperCase()} limit for ${adapter.name} reached`,
              retryAfterMs: error.retryAfterMs,
            }
          : {
              kind: 'server_error',
              retryable: false,
              status: 0,
              providerCode: 'gateway_tpm_limit',
              message: `the request alone exceeds the TPM limit of ${adapter.name}`,
            },
        cause: error,
      })
    }
  }
  return {
    name: adapter.name,
    model: adapter.model,
    dialect: adapter.dialect,
    apiKeys: adapter.apiKeys,
    nextKey: () => adapter.nextKey(),
    async send(request, options) {
      const refused = await take(request, options)
      return refused ? { ok: false, error: refused } : adapter.send(request, options)
    },
    async open(request, options) {
      const refused = await take(request, options)
      return refused ? { ok: false, error: refused } : adapter.open(request, options)
    },
    close: () => adapter.close(),
  }
}
