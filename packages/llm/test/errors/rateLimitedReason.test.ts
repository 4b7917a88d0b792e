import { Deadline } from '@hourglass/core'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { RateLimitedError } from '../../src/errors/RateLimitedError.js'
import type {
  RateLimitedError as PublicRateLimitedError,
  RateLimitedKind,
} from '../../src/index.js'

const quiet = { warn: () => {} }

async function refusal(limits: ProviderLimits, tokens: number): Promise<unknown> {
  const admission = new Admission({ limits, logger: quiet })
  return admission
    .acquire({ provider: 'acme', tokens, deadline: Deadline.after(4000), neededMs: 0 })
    .then(
      () => undefined,
      (e: unknown) => e,
    )
}

/**
 * A refusal no wait helps has one explanation worth passing on (the gateway
 * puts it in its 429): the error keeps it as a field, so a caller need not
 * pick it out of the message.
 */
describe("RateLimitedError's reason", () => {
  it('is the reason it was given, as a field', () => {
    const error = new RateLimitedError({
      provider: 'acme',
      retryAfterMs: Number.POSITIVE_INFINITY,
      reason: 'the request alone (9 tokens) exceeds the TPM limit (8 tokens)',
    })
    expect(error.reason).toBe('the request alone (9 tokens) exceeds the TPM limit (8 tokens)')
    expect(error.message).toContain(error.reason)
  })

  it("says, while Redis is down, that the request exceeds this process's share of the TPM limit, with both numbers", async () => {
    const limits = new ProviderLimits({
      limits: { acme: { tpm: 1000 } },
      redis: { status: 'reconnecting' },
      instances: 3,
      logger: quiet,
    })
    const error = await refusal(limits, 500)
    expect(error).toBeInstanceOf(RateLimitedError)
    expect((error as RateLimitedError).reason).toBe(
      "the request alone (500 tokens) exceeds this process's share of the TPM limit while Redis is unavailable: 333 of 1000 tokens (1 of 3 instances)",
    )
    expect(error).toMatchObject({ kind: 'rate_limited', retryAfterMs: Number.POSITIVE_INFINITY })
  })

  it('says the request exceeds the whole TPM limit when it does', async () => {
    const limits = new ProviderLimits({ limits: { acme: { tpm: 1000 } }, logger: quiet })
    const error = await refusal(limits, 1001)
    expect((error as RateLimitedError).reason).toBe(
      'the request alone (1001 tokens) exceeds the TPM limit (1000 tokens)',
    )
    // No window ever admits it: the kind says so, as a provider's own refusal does.
    expect((error as RateLimitedError).kind).toBe('request_too_large')
  })

  it('is public, with the kind type, from the package entry', () => {
    expectTypeOf<PublicRateLimitedError['reason']>().toEqualTypeOf<string>()
    expectTypeOf<RateLimitedKind>().toEqualTypeOf<
      'rate_limited' | 'overloaded' | 'request_too_large'
    >()
    expectTypeOf<PublicRateLimitedError['kind']>().toEqualTypeOf<RateLimitedKind>()
  })
})
