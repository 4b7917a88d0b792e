import { ManualClock } from '@hourglass/core'
import { redisAvailable } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { useRedisServer } from './support/redisServer.js'

const quiet = { warn: () => {}, info: () => {} }

// A give-back names its window by the PTTL its count saw: a window started
// since ends later, so it is not given to. But a give-back that comes a
// whole window after its count (a permit released as not sent once the
// HTTP client gave up on a request queued for a connection) found the next
// window already part spent, its PTTL below the one the count saw — and
// gave to it: one request more than the limit in that window, for the fleet.
describe.skipIf(!redisAvailable())('a give-back that comes a window late, on Redis', () => {
  const redis = useRedisServer()

  it('gives nothing to the window another process started since, however far into it: that window admits the limit, not more', async () => {
    const inspector = redis.client({})
    const prefix = `aged-${Math.random()}`
    const key = `${prefix}:rpm:acme`
    const clock = new ManualClock()
    const options = { limits: { acme: { rpm: 2 } }, keyPrefix: prefix, logger: quiet }
    const one = new ProviderLimits({ ...options, redis: redis.client({}), clock })
    const other = new ProviderLimits({ ...options, redis: redis.client({}) })

    const counted = await one.count('acme', 1)
    expect(counted.admitted).toBe(true)
    // A minute and a half later: the window that counted it ended, the
    // fleet started the next one (30 s ago) and filled it.
    clock.advance(90_000)
    await inspector.del(key)
    expect((await other.tryAcquire('acme', 1)).admitted).toBe(true)
    expect((await other.tryAcquire('acme', 1)).admitted).toBe(true)
    await inspector.pexpire(key, 30_000)

    if (counted.admitted) await counted.giveBack?.()

    expect(Number(await inspector.get(key))).toBe(2)
    expect(
      (await other.tryAcquire('acme', 1)).admitted,
      'admitted past the RPM limit in the new window',
    ).toBe(false)
  })

  it('still gives back to its own window while that window lasts', async () => {
    const inspector = redis.client({})
    const prefix = `aged-own-${Math.random()}`
    const key = `${prefix}:rpm:acme`
    const clock = new ManualClock()
    const options = { limits: { acme: { rpm: 2 } }, keyPrefix: prefix, logger: quiet }
    const one = new ProviderLimits({ ...options, redis: redis.client({}), clock })

    const counted = await one.count('acme', 1)
    expect((await one.tryAcquire('acme', 1)).admitted).toBe(true)
    // 20 s into the window (the process's clock and Redis's agree).
    clock.advance(20_000)
    await inspector.pexpire(key, 40_000)

    if (counted.admitted) await counted.giveBack?.()

    expect(Number(await inspector.get(key))).toBe(1)
    expect((await one.tryAcquire('acme', 1)).admitted).toBe(true)
  })
})
