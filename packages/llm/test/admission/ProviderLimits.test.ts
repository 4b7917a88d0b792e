import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it, vi } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { isRateLimited, type RateLimitedError } from '../../src/errors/RateLimitedError.js'
import { driveOne, WaitClock } from '../support/waitClock.js'

/** One admission layer: cooldowns, then these limits. */
const admitting = (limits: ProviderLimits, clock?: ManualClock) =>
  new Admission({ limits, ...(clock === undefined ? {} : { clock }) })

describe('ProviderLimits (memory) in admission', () => {
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

  it('admission refuses at once, with the retry time, when the reset comes after the deadline', async () => {
    const limits = new ProviderLimits({ limits: { acme: { rpm: 1 } } })
    // Admission's time on a manual clock that moves only while it waits: what passes is its waits.
    const clock = new WaitClock()
    const admission = admitting(limits, clock)
    ;(await admission.acquire({ provider: 'acme', tokens: 1 })).release()
    using deadline = Deadline.after(2000, { clock })
    const t0 = clock.now()
    const error = (await driveOne(
      clock,
      admission.acquire({ provider: 'acme', model: 'm1', tokens: 1, deadline }),
    ).catch((e: unknown) => e)) as RateLimitedError
    expect(clock.now() - t0).toBeLessThan(100)
    expect(isRateLimited(error)).toBe(true)
    expect(error.provider).toBe('acme')
    expect(error.model).toBe('m1')
    expect(error.limit).toBe('rpm')
    expect(error.retryAfterMs).toBeGreaterThan(55_000)
    expect(error.retryAtMs).toBeGreaterThan(Date.now() + 55_000)
    expect(error.message).toMatch(/its RPM limit/)
  })

  it('a request bigger than the whole TPM limit is refused for good, naming the limit; smaller ones still go', async () => {
    const admission = admitting(new ProviderLimits({ limits: { acme: { tpm: 1000 } } }))
    const error = (await admission
      .acquire({ provider: 'acme', tokens: 1001, deadline: Deadline.never() })
      .catch((e: unknown) => e)) as RateLimitedError
    expect(isRateLimited(error)).toBe(true)
    expect(error.limit).toBe('tpm')
    expect(error.retryAfterMs).toBe(Number.POSITIVE_INFINITY)
    expect(error.message).toMatch(/no retry helps.*1001 tokens.*exceeds the TPM limit/)
    ;(await admission.acquire({ provider: 'acme', tokens: 1000 })).release()
  })

  it('counts the time the request needs: a reset that leaves too little of the deadline is refused', async () => {
    const limits = new ProviderLimits({ limits: { acme: { rpm: 1 } }, windowMs: 1000 })
    expect((await limits.tryAcquire('acme', 1)).admitted).toBe(true)
    const clock = new ManualClock()
    const deadline = Deadline.after(1500, { clock })
    const decision = await limits.tryAcquire('acme', 1, { deadline, neededMs: 800 })
    expect(decision).toMatchObject({ admitted: false, fitsDeadline: false })
    const roomy = await limits.tryAcquire('acme', 1, { deadline, neededMs: 100 })
    expect(roomy).toMatchObject({ admitted: false, fitsDeadline: true })
    // Through admission, the same `neededMs` decides: refused now, not queued.
    const admission = admitting(limits, clock)
    await expect(
      admission.acquire({ provider: 'acme', tokens: 1, deadline, neededMs: 800 }),
    ).rejects.toMatchObject({ code: 'RATE_LIMITED', limit: 'rpm' })
    deadline.dispose()
  })

  it('admission waits for the reset when it fits the deadline, says so, and admits then', async () => {
    // The window is counted on the wall clock (`Date.now`, rate-limiter-flexible's); here it
    // reads a manual clock, admission's too, moved only while admission waits on it.
    const clock = new WaitClock()
    const epoch = Date.now()
    vi.spyOn(Date, 'now').mockImplementation(() => epoch + clock.now())
    const waits: Array<[string, string, number]> = []
    const limits = new ProviderLimits({
      limits: { acme: { rpm: 1 } },
      windowMs: 1000,
      onWait: (provider, limit, waitMs) => waits.push([provider, limit, waitMs]),
    })
    const admission = admitting(limits, clock)
    ;(await admission.acquire({ provider: 'acme', tokens: 1 })).release()
    using deadline = Deadline.after(3000, { clock })
    const t0 = clock.now()
    const permit = await driveOne(
      clock,
      admission.acquire({ provider: 'acme', tokens: 1, deadline, neededMs: 0 }),
    )
    const waited = clock.now() - t0
    permit.release()
    expect(waited).toBeGreaterThan(500)
    expect(waited).toBeLessThan(2500)
    expect(permit.waitedMs).toBeGreaterThan(500)
    expect(waits).toHaveLength(1)
    expect(waits[0]?.slice(0, 2)).toEqual(['acme', 'rpm'])
  })

  it('a wait for a limit ends when the deadline is cancelled, leaving no timer behind', async () => {
    const limits = new ProviderLimits({ limits: { acme: { rpm: 1 } }, windowMs: 5000 })
    const clock = new ManualClock()
    const admission = admitting(limits, clock)
    ;(await admission.acquire({ provider: 'acme', tokens: 1 })).release()
    const deadline = Deadline.after(60_000, { clock })
    const waiting = admission.acquire({ provider: 'acme', tokens: 1, deadline, neededMs: 0 })
    // The limit's wait is on the deadline's clock: the deadline's own timer and the wait's.
    await expect.poll(() => clock.pendingTimers).toBe(2)
    deadline.cancel(new Error('client left'))
    await expect(waiting).rejects.toThrow('client left')
    expect(clock.pendingTimers).toBe(0)
  })

  it('nothing is counted against a limit while the provider is cooling', async () => {
    const limits = new ProviderLimits({ limits: { acme: { rpm: 2 } } })
    const clock = new ManualClock()
    const admission = admitting(limits, clock)
    await admission.report('acme', undefined, {
      ok: false,
      error: { kind: 'rate_limited', status: 429, retryAfterMs: 10_000 },
    })
    const deadline = Deadline.after(1000, { clock })
    await expect(
      admission.acquire({ provider: 'acme', tokens: 1, deadline }),
    ).rejects.toMatchObject({ code: 'RATE_LIMITED', limit: 'cooldown' })
    deadline.dispose()
    // Both requests of the window are still there.
    expect((await limits.tryAcquire('acme', 1)).admitted).toBe(true)
    expect((await limits.tryAcquire('acme', 1)).admitted).toBe(true)
    expect((await limits.tryAcquire('acme', 1)).admitted).toBe(false)
  })

  it('rejects windows that are not whole seconds and limits that are not whole numbers', () => {
    expect(() => new ProviderLimits({ limits: {}, windowMs: 1500 })).toThrow(/whole seconds/)
    expect(() => new ProviderLimits({ limits: { a: { rpm: 1.5 } } })).toThrow(/rpm/)
    expect(() => new ProviderLimits({ limits: { a: { tpm: -1 } } })).toThrow(/tpm/)
  })
})
