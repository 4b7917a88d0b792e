import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'

describe('a NaN weight does not pass the TPM limit', () => {
  // NaN > limit and NaN > 0 are both false: the request was admitted and
  // consumed nothing, so any number of them went out under a TPM limit.
  it('tokens: NaN (or a function returning NaN) is a RangeError, and nothing is consumed', async () => {
    const limits = new ProviderLimits({ limits: { p: { tpm: 100 } } })
    const admission = new Admission({ limits })
    await expect(admission.acquire({ provider: 'p', tokens: Number.NaN })).rejects.toThrow(
      RangeError,
    )
    await expect(admission.acquire({ provider: 'p', tokens: () => Number.NaN })).rejects.toThrow(
      /tokens/,
    )
    await expect(limits.tryAcquire('p', 100)).resolves.toEqual({ admitted: true })
  })

  // Math.max(1, NaN) is NaN: the local limiter used while Redis is down would limit nothing.
  it('instances: NaN is a RangeError naming it', () => {
    expect(() => new ProviderLimits({ limits: {}, instances: Number.NaN })).toThrow(/instances/)
  })

  // 0 and 0.5 were read as 1 and 2.5 as 2, without a word, though the
  // message said "a number ≥ 1".
  it('instances that is not a whole number ≥ 1 is refused, naming it; null is the default', () => {
    for (const instances of [0, 0.5, 2.5, -1, Number.POSITIVE_INFINITY]) {
      expect(() => new ProviderLimits({ limits: {}, instances }), String(instances)).toThrow(
        new RangeError(
          `instances must be a whole number ≥ 1, got ${instances === Number.POSITIVE_INFINITY ? 'Infinity' : instances}`,
        ),
      )
    }
    expect(() => new ProviderLimits({ limits: {}, instances: '3' as unknown as number })).toThrow(
      TypeError,
    )
    expect(
      () => new ProviderLimits({ limits: {}, instances: null as unknown as number }),
    ).not.toThrow()
  })
})
