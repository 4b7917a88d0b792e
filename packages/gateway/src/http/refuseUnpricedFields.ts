import type { ChatRequest } from '../llm.js'
import { GatewayRequestError } from './GatewayRequestError.js'

/**
 * Under `policy.maxCostUsdPerRequest`, refuses (400, before anything is
 * sent) the fields that make a provider bill more than the configured
 * per-token prices say, so the bound checked before sending would not bound
 * the bill:
 *
 * - `service_tier: "priority"` — OpenAI bills priority processing at about
 *   twice the standard per-token prices (GPT-5: $2.50 / $20 per million
 *   instead of $1.25 / $10). Forwarded, a request the budget allowed at
 *   $0.01 could cost $0.02, and its log line said the standard price.
 * - `web_search_options` — OpenAI's search models bill each search as a tool
 *   call (a fee per call, not per token) plus the pages read as input: no
 *   price of the table covers either.
 *
 * The other tiers (`auto`, `default`, `flex` — cheaper —, `scale`, prepaid)
 * are not billed above the standard price by the request itself.
 */
export function refuseUnpricedFields(request: ChatRequest): void {
  const extra = request.extra
  if (extra === undefined) return
  if (extra['service_tier'] === 'priority') {
    throw unpriced(
      'service_tier',
      '"priority" is billed above the prices policy.maxCostUsdPerRequest is checked against (OpenAI: about twice the standard price); send "auto", "default" or "flex", or none',
    )
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
