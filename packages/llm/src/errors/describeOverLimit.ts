import type { OverLimit } from '../types.js'

/**
 * "the request alone (50000 tokens) exceeds this model's TPM limit (30000
 * tokens)", the figures when the provider gave them: what the caller must
 * reduce, and by how much.
 */
export function describeOverLimit(over: OverLimit | undefined, whose: string): string {
  return over === undefined
    ? `the request alone exceeds ${whose}'s limit`
    : `the request alone (${over.requestedTokens} tokens) exceeds ${whose}'s ${over.limit} limit (${over.limitTokens} tokens)`
}
