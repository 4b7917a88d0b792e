import { RETRY_BUDGET_REFUSED } from '../http/errorReply.js'
import { currentRequest } from '../http/requestScope.js'
import { isProviderLimited, type ProviderLimits } from '../limits/index.js'
import {
  type ChatRequest,
  estimatePromptTokens,
  type ModelAdapter,
  ProviderError,
  type RetryBudgetRegistry,
  type SendOptions,
} from '../llm.js'
import type { GatewayMetrics } from '../metrics/GatewayMetrics.js'

export interface LimitedAdapterOptions {
  limits: ProviderLimits
  /** Time the provider usually needs, in ms: a limit wait must leave it before the deadline. */
  neededMs: () => number
  /** Where a client's retry is counted (absent: client retries are not gated). */
  retryBudgets: RetryBudgetRegistry | undefined
  metrics: GatewayMetrics
}

/**
 * An adapter that gates a client's retry on its provider's retry budget, then
 * takes the provider's RPM/TPM share before every attempt.
 *
 * A request the SDK marked as its retry (`X-Stainless-Retry-Count > 0`) is
 * counted once against the first provider it reaches, as the failure that
 * made the client retry (`recordFailure`, before anything is sent). When
 * that provider's budget is already below half (no retry allowed, gRPC's
 * rule), the retry is not sent there: the policy moves on to the next
 * provider of the list, and when every one is spent the client gets a 503
 * `retry_budget_exhausted` with `x-should-retry: false` at once — a storm of
 * SDK retries adds no load to a provider that is failing.
 *
 * A limit that resets in time (leaving the time the provider usually needs)
 * is waited for; one that does not becomes a `rate_limited` failure of this
 * attempt without sending anything, so the policy falls back to the next
 * provider instead of queueing past the deadline. A request larger than the
 * whole TPM limit is a non-retryable failure (never sent; the next provider
 * may take it).
 */
export function limitedAdapter(
  adapter: ModelAdapter,
  options: LimitedAdapterOptions,
): ModelAdapter {
  const { limits, neededMs, retryBudgets, metrics } = options
  /** A client retry refused here, or undefined (not a retry, already counted, or admitted now). */
  const gateRetry = (): ProviderError | undefined => {
    const scope = currentRequest()
    if (retryBudgets === undefined || scope === undefined) return undefined
    if (scope.clientRetry === 0 || scope.retryCharged) return undefined
    const budget = retryBudgets.get(adapter.name)
    if (!budget.canRetry()) {
      metrics.clientRetry(adapter.name, 'refused')
      return new ProviderError({
        provider: adapter.name,
        model: adapter.model,
        error: {
          kind: 'server_error',
          retryable: false,
          status: 0,
          providerCode: RETRY_BUDGET_REFUSED,
          message: `the retry budget of ${adapter.name} is spent; a client retry is not sent there`,
        },
      })
    }
    budget.recordFailure()
    scope.retryCharged = true
    metrics.clientRetry(adapter.name, 'admitted')
    return undefined
  }
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
    // Cooldowns are kept per provider + base URL + key: keep the endpoint.
    baseURL: adapter.baseURL,
    dialect: adapter.dialect,
    apiKeys: adapter.apiKeys,
    nextKey: () => adapter.nextKey(),
    async send(request, options) {
      const refused = gateRetry() ?? (await take(request, options))
      return refused ? { ok: false, error: refused } : adapter.send(request, options)
    },
    async open(request, options) {
      const refused = gateRetry() ?? (await take(request, options))
      return refused ? { ok: false, error: refused } : adapter.open(request, options)
    },
    close: () => adapter.close(),
  }
}
