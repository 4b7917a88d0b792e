import type { ModelFailure } from '../errors/ModelFailure.js'
import { isModelUnavailable } from '../errors/ModelUnavailableError.js'
import { isProviderError } from '../errors/ProviderError.js'
import { isRateLimited } from '../errors/RateLimitedError.js'
import type { OverLimit } from '../types.js'

/**
 * Why no smaller prompt helps `refused`, or undefined when one may: every
 * `request_too_large` refusal in it gives its figures (admission's TPM
 * limit, or the provider's "Limit 100, Requested 505") and `maxTokens`
 * alone reaches each limit — the output cap counts against a token limit
 * as the prompt does, so shrinking the messages (`recovery.collapse`,
 * `compact`) cannot bring the request under it. Running them cost a
 * summarising call or two, then failed all the same, "(after collapse,
 * compact)". A refusal without figures leaves the steps to run.
 */
export function outputCapOverLimit(
  refused: unknown,
  maxTokens: number | undefined,
): string | undefined {
  if (typeof maxTokens !== 'number' || !(maxTokens > 0)) return undefined
  const limits: OverLimit[] = []
  const failures: unknown[] = []
  if (isRateLimited(refused)) {
    failures.push(refused, ...refused.causes.map((f: ModelFailure) => f.cause))
  } else if (isModelUnavailable(refused)) {
    failures.push(...refused.causes.map((f: ModelFailure) => f.cause))
  } else {
    return undefined
  }
  for (const failure of failures) {
    if (isRateLimited(failure)) {
      if (failure.kind !== 'request_too_large') continue
      if (failure.overLimit === undefined) return undefined
      limits.push(failure.overLimit)
    } else if (isProviderError(failure)) {
      if (failure.kind !== 'request_too_large') continue
      const over = failure.normalized.overLimit
      if (over === undefined) return undefined
      limits.push(over)
    }
  }
  if (limits.length === 0) return undefined
  if (!limits.every((over) => maxTokens >= over.limitTokens)) return undefined
  const named = [...new Set(limits.map((o) => `${o.limit} limit (${o.limitTokens} tokens)`))]
  return `the output cap alone (maxTokens ${maxTokens}) is at or over the ${named.join(', ')}: no smaller prompt fits, recovery steps not run; lower maxTokens`
}
