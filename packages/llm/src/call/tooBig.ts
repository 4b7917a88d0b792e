import type { ModelFailure } from '../errors/ModelFailure.js'
import { isModelUnavailable, type ModelUnavailableError } from '../errors/ModelUnavailableError.js'
import { isProviderError } from '../errors/ProviderError.js'
import { isRateLimited, type RateLimitedError } from '../errors/RateLimitedError.js'
import { isRequestRejected, type RequestRejectedError } from '../errors/RequestRejectedError.js'

/**
 * The refusals a smaller request may get past: the prompt too long for the
 * context window, or a model of the list (each was tried, as a fallback)
 * refusing it as bigger than its limit (`request_too_large`) — whatever the
 * others failed with: one overloaded or rate limited beside it left the
 * call with no recovery at all, where the smaller request would have gone
 * to the model that refused the size. The size refused by the provider (its
 * `ProviderError`) or by admission before sending (`ProviderLimits`: a
 * `RateLimitedError` of that kind, alone or among the causes) alike: the
 * second, missed, ended the call where the provider's own 429 "Request too
 * large" was recovered from.
 */
export type TooBig = RequestRejectedError | ModelUnavailableError | RateLimitedError

export function tooBig(error: unknown): TooBig | undefined {
  if (isRequestRejected(error)) return error.kind === 'context_too_long' ? error : undefined
  if (isRateLimited(error)) {
    return error.kind === 'request_too_large' || error.causes.some(refusedAsTooLarge)
      ? error
      : undefined
  }
  if (!isModelUnavailable(error)) return undefined
  return error.causes.some(refusedAsTooLarge) ? error : undefined
}

function refusedAsTooLarge(failure: ModelFailure): boolean {
  const { cause } = failure
  return (isProviderError(cause) || isRateLimited(cause)) && cause.kind === 'request_too_large'
}
