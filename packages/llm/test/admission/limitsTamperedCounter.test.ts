import { redisAvailable } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { useRedisServer } from './support/redisServer.js'

const available = redisAvailable()
if (!available) {
  console.warn(
    '\n!!! redis-server is not on PATH: the tampered-counter tests are SKIPPED. Install redis-server (CI does) to run them. !!!\n',
  )
}

const WINDOW_MS = 60_000

/**
 * A window's counter in Redis that no `ProviderLimits` wrote: set by hand
 * (an operator "resetting" a limit), restored from a backup without its
 * expiry, tampered with. The counter script never lets a window run longer
 * than the window nor count below zero; before, a count over the limit
 * expiring in 31,700 years refused every request of the fleet for good
 * (`retryAfterMs` 1e15), and a negative one admitted every request for as
 * long.
 */
describe.skipIf(!available)('a window counter tampered with in Redis', () => {
  const redis = useRedisServer()

  async function setup() {
    const c = redis.client({ maxRetriesPerRequest: 0 })
    await c.ping()
    const prefix = `tampered-${Math.random()}`
    const warnings: string[] = []
    const limits = new ProviderLimits({
      limits: { acme: { rpm: 2 } },
      windowMs: WINDOW_MS,
      redis: c,
      keyPrefix: prefix,
      logger: { warn: (m) => warnings.push(m) },
    })
    // The first count makes the window, as the fleet's first request does.
    expect((await limits.tryAcquire('acme', 1)).admitted).toBe(true)
    return { c, limits, key: `${prefix}:rpm:acme`, warnings }
  }

  it('a count over the limit that expires in 31,700 years holds for one window at most', async () => {
    const { c, limits, key, warnings } = await setup()
    await c.set(key, 100, 'PX', 1e15)
    const refused = await limits.tryAcquire('acme', 1)
    expect(refused.admitted).toBe(false)
    expect(refused.admitted ? 0 : refused.retryAfterMs).toBeLessThanOrEqual(WINDOW_MS)
    expect(await c.pttl(key)).toBeLessThanOrEqual(WINDOW_MS)
    expect(warnings, 'read as Redis failing').toEqual([])
  })

  it('a negative count admits the limit, not every request', async () => {
    const { c, limits, key } = await setup()
    await c.set(key, -1e9, 'PX', 1e15)
    const decisions = []
    for (let i = 0; i < 4; i++) decisions.push((await limits.tryAcquire('acme', 1)).admitted)
    expect(decisions).toEqual([true, true, false, false])
    expect(await c.pttl(key)).toBeLessThanOrEqual(WINDOW_MS)
  })

  // Text failed the script (every instance counted on its local share, "Redis
  // unavailable"), a fraction failed INCRBY, and a count past 2^63 went out
  // as a negative number: every request admitted for the window.
  it.each([['1e300'], ['abc'], ['2.5'], ['0x1'], ['01'], ['-0'], ['1e0']])(
    'a count of %s is counted from 0 again: the limit holds, and Redis is not read as failing',
    async (value) => {
      const { c, limits, key, warnings } = await setup()
      await c.set(key, value, 'PX', WINDOW_MS)
      const decisions = []
      for (let i = 0; i < 4; i++) decisions.push((await limits.tryAcquire('acme', 1)).admitted)
      expect(decisions).toEqual([true, true, false, false])
      expect(warnings, 'read as Redis failing').toEqual([])
    },
  )

  it('a count kept without expiry gets the window back', async () => {
    const { c, limits, key } = await setup()
    await c.set(key, 100)
    expect((await limits.tryAcquire('acme', 1)).admitted).toBe(false)
    const ttl = await c.pttl(key)
    expect(ttl).toBeGreaterThan(0)
    expect(ttl).toBeLessThanOrEqual(WINDOW_MS)
  })
})
