import { describe, expect, it } from 'vitest'
import { MAX_LIMIT_WINDOW_MS, ProviderLimits } from '../../src/admission/ProviderLimits.js'

/**
 * The in-memory limiter (rate-limiter-flexible's memory store, also the
 * local fallback while Redis is down) ends each window with a Node timer,
 * and Node fires a timer longer than 2^31 - 1 ms after 1 ms: a 30-day
 * window (a monthly budget) with `rpm: 1` admitted every request.
 */
describe('ProviderLimits: windowMs within a Node timer’s reach', () => {
  it('a window longer than 2^31 - 1 ms (24.8 days) is refused, naming windowMs and the bound', () => {
    for (const windowMs of [2_592_000_000, 2_147_484_000]) {
      expect(
        () => new ProviderLimits({ limits: { p: { rpm: 1 } }, windowMs }),
        String(windowMs),
      ).toThrow(
        new RangeError(
          `windowMs must be whole seconds from 1000 to ${MAX_LIMIT_WINDOW_MS} ms (24.8 days, the longest a Node timer waits), got ${windowMs}`,
        ),
      )
    }
    // A string was coerced by the arithmetic: '2592000000' compared as a number, '60000' accepted.
    expect(
      () => new ProviderLimits({ limits: {}, windowMs: '60000' as unknown as number }),
    ).toThrow(TypeError)
    // Also with Redis: its local fallback, while Redis is down, is the same memory store.
    const redis = { status: 'ready', evalsha: async () => [], eval: async () => [] }
    expect(
      () => new ProviderLimits({ limits: { p: { rpm: 1 } }, windowMs: 2_592_000_000, redis }),
    ).toThrow(RangeError)
  })

  it('the longest window taken (2 147 483 000 ms) holds: its timer does not overflow, and rpm 1 admits one request', async () => {
    // Node warns (TimeoutOverflowWarning, on the next tick) for each timer it cuts to 1 ms.
    const overflows: string[] = []
    const onWarning = (warning: Error) => {
      if (warning.name === 'TimeoutOverflowWarning') overflows.push(warning.message)
    }
    process.on('warning', onWarning)
    try {
      const limits = new ProviderLimits({ limits: { p: { rpm: 1 } }, windowMs: 2_147_483_000 })
      expect(await limits.tryAcquire('p', 0)).toEqual({ admitted: true })
      const second = await limits.tryAcquire('p', 0)
      expect(second).toMatchObject({ admitted: false, limit: 'rpm' })
      expect(second.admitted === false && second.retryAfterMs).toBeGreaterThan(2_147_482_000)
      await new Promise<void>((resolve) => setImmediate(resolve))
      expect(overflows).toEqual([])
    } finally {
      process.off('warning', onWarning)
    }
    // With Redis too (its local fallback's window is as long).
    const redis = { status: 'ready', evalsha: async () => [], eval: async () => [] }
    expect(
      () => new ProviderLimits({ limits: { p: { rpm: 1 } }, windowMs: 2_147_483_000, redis }),
    ).not.toThrow()
  })
})
