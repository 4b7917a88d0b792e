import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import {
  isProviderLimited,
  type ProviderLimitedError,
  ProviderLimits,
} from '../../src/limits/index.js'

describe('ProviderLimits (memory)', () => {
  it('admits rpm requests per window, then refuses with the time until the window resets', async () => {
    const limits = new ProviderLimits({ limits: { acme: { rpm: 3 } } })
    for (let i = 0; i < 3; i++)
      expect(await limits.tryAcquire('acme', 10)).toEqual({ admitted: true })
    const refused = await limits.tryAcquire('acme', 10)
    expect(refused.admitted).toBe(false)
    if (refused.admitted) return
    expect(refused.limit).toBe('rpm')
    expect(refused.retryAfterMs).toBeGreaterThan(55_000)
    expect(refused.retryAfterMs).toBeLessThanOrEqual(60_000)
    expect(refused.retryAtMs).toBeGreaterThan(Date.now() + 55_000)
  })

  it('weighs requests by tokens: each takes its estimate from TPM, and a refused one takes nothing', async () => {
    const limits = new ProviderLimits({ limits: { acme: { rpm: 100, tpm: 1000 } } })
    expect((await limits.tryAcquire('acme', 600)).admitted).toBe(true)
    const refused = await limits.tryAcquire('acme', 600)
    expect(refused).toMatchObject({ admitted: false, limit: 'tpm' })
    // The refused 600 were given back (tokens and the request count): 400 still fit.
    expect((await limits.tryAcquire('acme', 400)).admitted).toBe(true)
    expect((await limits.tryAcquire('acme', 1)).admitted).toBe(false)
    const requestsLeft = 100 - 2
    for (let i = 0; i < requestsLeft; i++) {
      expect((await limits.tryAcquire('acme', 0)).admitted).toBe(true)
    }
    expect(await limits.tryAcquire('acme', 0)).toMatchObject({ admitted: false, limit: 'rpm' })
  })

  it('refuses for good a request bigger than the whole TPM limit', async () => {
    const limits = new ProviderLimits({ limits: { acme: { tpm: 1000 } } })
    const decision = await limits.tryAcquire('acme', 1001, { deadline: Deadline.never() })
    expect(decision).toMatchObject({
      admitted: false,
      limit: 'tpm',
      retryAfterMs: Number.POSITIVE_INFINITY,
      fitsDeadline: false,
    })
    expect((await limits.tryAcquire('acme', 1000)).admitted).toBe(true)
  })

  it("isolates providers: one provider's spent limit never refuses another's requests", async () => {
    const limits = new ProviderLimits({ limits: { acme: { rpm: 1 }, globex: { rpm: 2 } } })
    expect((await limits.tryAcquire('acme', 1)).admitted).toBe(true)
    expect((await limits.tryAcquire('acme', 1)).admitted).toBe(false)
    expect((await limits.tryAcquire('globex', 1)).admitted).toBe(true)
    expect((await limits.tryAcquire('globex', 1)).admitted).toBe(true)
    expect((await limits.tryAcquire('unlisted', 1_000_000)).admitted).toBe(true)
  })

  it('fails fast, with the retry time, when the reset comes after the deadline', async () => {
    const limits = new ProviderLimits({ limits: { acme: { rpm: 1 } } })
    await limits.acquire('acme', 1)
    using deadline = Deadline.after(2000)
    const t0 = performance.now()
    const error = (await limits
      .acquire('acme', 1, { deadline })
      .catch((e: unknown) => e)) as ProviderLimitedError
    expect(performance.now() - t0).toBeLessThan(100)
    expect(isProviderLimited(error)).toBe(true)
    expect(error.provider).toBe('acme')
    expect(error.limit).toBe('rpm')
    expect(error.retryAfterMs).toBeGreaterThan(55_000)
    expect(error.retryAtMs).toBeGreaterThan(Date.now() + 55_000)
  })

  it('counts the time the request needs: a reset that leaves too little of the deadline is refused', async () => {
    const limits = new ProviderLimits({ limits: { acme: { rpm: 1 } }, windowMs: 1000 })
    await limits.acquire('acme', 1)
    const clock = new ManualClock()
    const deadline = Deadline.after(1500, { clock })
    const decision = await limits.tryAcquire('acme', 1, { deadline, neededMs: 800 })
    expect(decision).toMatchObject({ admitted: false, fitsDeadline: false })
    const roomy = await limits.tryAcquire('acme', 1, { deadline, neededMs: 100 })
    expect(roomy).toMatchObject({ admitted: false, fitsDeadline: true })
    deadline.dispose()
  })

  it('waits for the reset when it fits the deadline, and admits then', async () => {
    const limits = new ProviderLimits({ limits: { acme: { rpm: 1 } }, windowMs: 1000 })
    await limits.acquire('acme', 1)
    using deadline = Deadline.after(3000)
    const t0 = performance.now()
    await limits.acquire('acme', 1, { deadline })
    const waited = performance.now() - t0
    expect(waited).toBeGreaterThan(500)
    expect(waited).toBeLessThan(2500)
  })

  it("ends a wait when the deadline's signal aborts, leaving no timer behind", async () => {
    const limits = new ProviderLimits({ limits: { acme: { rpm: 1 } }, windowMs: 5000 })
    await limits.acquire('acme', 1)
    const clock = new ManualClock()
    const deadline = Deadline.after(60_000, { clock })
    const waiting = limits.acquire('acme', 1, { deadline })
    await new Promise<void>((resolve) => setImmediate(resolve))
    expect(clock.pendingTimers).toBe(2)
    deadline.cancel(new Error('client left'))
    await expect(waiting).rejects.toThrow('client left')
    expect(clock.pendingTimers).toBe(0)
  })

  it('rejects windows that are not whole seconds and limits that are not whole numbers', () => {
    expect(() => new ProviderLimits({ limits: {}, windowMs: 1500 })).toThrow(/whole seconds/)
    expect(() => new ProviderLimits({ limits: { a: { rpm: 1.5 } } })).toThrow(/rpm/)
    expect(() => new ProviderLimits({ limits: { a: { tpm: -1 } } })).toThrow(/tpm/)
  })
})
