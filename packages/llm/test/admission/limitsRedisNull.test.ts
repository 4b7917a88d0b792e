import { describe, expect, it } from 'vitest'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'

/**
 * `redis: null` was read as a client: the first count fell back to the local
 * limiter, whose warning read `null.status` inside rate-limiter-flexible's
 * promise chain — an unhandled rejection that ended the process, and the
 * count never settled. Every other option of ProviderLimits (and Admission's
 * `limits` and `store`) reads `null` as none.
 */
describe('ProviderLimits({ redis }) that is not a client', () => {
  // Before: an unhandled rejection (TypeError: Cannot read properties of null
  // (reading 'status')) and a count that never settled.
  it('null is none: in-memory limits, counted and refused as such', async () => {
    const warned: string[] = []
    const limits = new ProviderLimits({
      limits: { a: { rpm: 1 } },
      redis: null as never,
      logger: { warn: (m) => warned.push(m) },
    })
    await expect(limits.tryAcquire('a', 0)).resolves.toEqual({ admitted: true })
    await expect(limits.tryAcquire('a', 0)).resolves.toMatchObject({
      admitted: false,
      limit: 'rpm',
    })
    expect(warned).toEqual([])
    expect(limits.remote).toBe(false)
  })

  it.each([
    ['a URL string', 'redis://127.0.0.1:6379', TypeError],
    ['a number', 6379, RangeError],
  ])('%s is refused when made, naming the option', (_what, redis, Kind) => {
    expect(() => new ProviderLimits({ limits: { a: { rpm: 1 } }, redis: redis as never })).toThrow(
      Kind,
    )
    expect(() => new ProviderLimits({ limits: { a: { rpm: 1 } }, redis: redis as never })).toThrow(
      /ProviderLimits: redis must be a Redis client/,
    )
  })
})
