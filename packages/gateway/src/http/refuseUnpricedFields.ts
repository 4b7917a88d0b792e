import type { ModelTarget } from '../config/gatewayConfigSchema.js'
import { type ChatRequest, CostBudget, isUnknownPrice, type ModelPrice } from '../llm.js'
import { GatewayRequestError } from './GatewayRequestError.js'

/**
 * Under `policy.maxCostUsdPerRequest`, refuses (400, before anything is
 * sent) what would make a provider of `targets` bill more than the
 * configured prices say, so the bound checked before sending would not bound
 * the bill:
 *
 * - a `service_tier` the price of some model of the list cannot price, by
 *   llm's rule (`ModelPrice.serviceTiers`, the one `CostBudget` applies): a
 *   tier listed in the model's `serviceTiers` is priced at its price; the
 *   standard tier's names (`default`, `standard`), `flex` and `scale` bill no
 *   more than the standard price; any other unlisted — `priority`, billed
 *   by OpenAI at about twice the standard price, or a name llm does not
 *   know — has no price. `auto`, and no `service_tier` at all, are never
 *   refused: they are billed at the tier the project is configured for,
 *   which may be priority, and held at the dearest tier the price lists
 *   (list `priority` when the project may be served at it).
 * - `web_search_options` — OpenAI's search models bill each search as a tool
 *   call (a fee per call, not per token) plus the pages read as input: no
 *   price of the table covers either.
 */
export function refuseUnpricedFields(
  request: ChatRequest,
  targets: readonly ModelTarget[],
  providerPrices: Readonly<Record<string, Readonly<Record<string, ModelPrice>>>>,
): void {
  const extra = request.extra
  if (extra === undefined) return
  const tier = extra['service_tier']
  if (typeof tier === 'string') {
    // llm's own check (callModel makes it too, naming no provider): one rule for which tiers are priced.
    const budget = checkerFor(providerPrices)
    for (const { provider, model } of targets) {
      try {
        budget.assertPriced(model, provider, tier)
      } catch (error) {
        if (!isUnknownPrice(error)) throw error
        throw unpriced(
          'service_tier',
          `"${tier.slice(0, 40)}" has no price for ${provider}/${model}, so policy.maxCostUsdPerRequest cannot bound its bill (priority: about twice the standard price at OpenAI); send "auto", "default" or "flex", or none, or give the tier's price in providers.${provider}.prices["${model}"].serviceTiers`,
        )
      }
    }
  }
  if (Object.hasOwn(extra, 'web_search_options')) {
    throw unpriced(
      'web_search_options',
      'web search is billed per search, which no price of policy.maxCostUsdPerRequest covers; remove the field',
    )
  }
}

function unpriced(field: string, problem: string): GatewayRequestError {
  return new GatewayRequestError({
    status: 400,
    errorCode: 'invalid_request',
    param: field,
    message: `${field}: ${problem}`,
  })
}

/** One price checker per price table (fixed at start): a CostBudget validates its whole table when made. */
const checkers = new WeakMap<object, CostBudget>()

function checkerFor(
  providerPrices: Readonly<Record<string, Readonly<Record<string, ModelPrice>>>>,
): CostBudget {
  let budget = checkers.get(providerPrices)
  if (budget === undefined) {
    budget = new CostBudget({ limitUsd: Number.POSITIVE_INFINITY, prices: {}, providerPrices })
    checkers.set(providerPrices, budget)
  }
  return budget
}
