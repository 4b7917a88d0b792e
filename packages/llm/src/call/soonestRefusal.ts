import type { ModelFailure } from '../errors/ModelFailure.js'
import { type RateLimitedError, restatedRefusal } from '../errors/RateLimitedError.js'

/**
 * Admission turned away every model of the list (`causes`, each a
 * `RateLimitedError`): the error that says when the request can be served
 * soonest — the refusal of the earliest `retryAtMs`, the first of the list
 * on a tie — with every model's refusal as its `causes`. The last refusal
 * thrown as it was let the list's order decide what the caller was told: a
 * fallback cooling for 40 s hid a primary back in 2 s, and one too large
 * for its TPM limit (no wait helps: a 413 through the gateway) hid a model
 * that would serve the request in 2 s.
 */
export function soonestRefusal(causes: readonly ModelFailure[]): RateLimitedError {
  let soonest: RateLimitedError | undefined
  for (const { cause } of causes) {
    const refusal = cause as RateLimitedError
    if (soonest === undefined || refusal.retryAtMs < soonest.retryAtMs) soonest = refusal
  }
  const chosen = soonest as RateLimitedError
  return restatedRefusal(chosen, { causes, cause: chosen })
}
