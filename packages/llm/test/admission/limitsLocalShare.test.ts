import { Deadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'

/** A Redis client that is down: rate-limiter-flexible hands every count to the local limiter. */
const down = { status: 'reconnecting' }

/** TPM 1000 shared by three processes, Redis down: this process allows floor(1000 / 3) = 333 per window. */
const degraded = (windowMs: number) =>
  new ProviderLimits({
    limits: { acme: { rpm: 100, tpm: 1000 } },
    redis: down,
    instances: 3,
    windowMs,
    logger: { warn: () => {} },
  })

describe("while Redis is down, a request larger than this process's TPM share", () => {
  it('is refused for as long as the local limiter decides (Infinity), not told to retry at a reset that cannot hold it', async () => {
    const limits = degraded(1000)
    const decision = await limits.tryAcquire('acme', 500, { deadline: Deadline.never() })
    expect(limits.degraded).toBe(true)
    expect(decision).toMatchObject({
      admitted: false,
      limit: 'tpm',
      retryAfterMs: Number.POSITIVE_INFINITY,
      fitsDeadline: false,
    })
    // It took nothing, request count included: the whole share is still there.
    expect((await limits.tryAcquire('acme', 333)).admitted).toBe(true)
    // A request within the share that does not fit what is left waits for the reset, as before.
    const later = await limits.tryAcquire('acme', 1)
    expect(later).toMatchObject({ admitted: false, limit: 'tpm' })
    expect(later.admitted === false && Number.isFinite(later.retryAfterMs)).toBe(true)
  })

  it('admission refuses it at once (no wait for a window), with a Retry-After of Infinity', async () => {
    const waits: number[] = []
    const limits = new ProviderLimits({
      limits: { acme: { tpm: 1000 } },
      redis: down,
      instances: 3,
      logger: { warn: () => {} },
      onWait: (_provider, _limit, waitMs) => waits.push(waitMs),
    })
    const admission = new Admission({ limits, logger: { warn: () => {} } })
    const error = await admission
      .acquire({ provider: 'acme', tokens: 500, deadline: Deadline.after(4000), neededMs: 0 })
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect(isRateLimited(error)).toBe(true)
    expect(error).toMatchObject({ limit: 'tpm', retryAfterMs: Number.POSITIVE_INFINITY })
    expect(waits).toEqual([])
  })
})
