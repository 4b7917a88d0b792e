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
})
