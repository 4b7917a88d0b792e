import { ManualClock } from '@hourglass/core'
import { redisAvailable } from '@hourglass/testkit'
import type { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { useRedisServer } from './support/redisServer.js'

const quiet = { warn: () => {}, info: () => {} }

/**
 * The count's window has ended (deleted, as its expiry would) and another
 * process started the next one `ageMs` ago and filled it (2 of 2): made by
 * real Redis operations, on Redis's own clock.
 */
async function nextWindowFilled(
  inspector: Redis,
  other: ProviderLimits,
  key: string,
  ageMs: number,
): Promise<void> {
  await inspector.del(key)
  expect((await other.tryAcquire('acme', 1)).admitted).toBe(true)
  expect((await other.tryAcquire('acme', 1)).admitted).toBe(true)
  await inspector.pexpire(key, 60_000 - ageMs)
}

// A give-back names its window by when that window ends on Redis's own
// clock (TIME + PTTL, read by the script that counted it): a window another
// process started since ends a whole window later. Named by a PTTL aged on
// the limits' clock instead, a late give-back whose window had ended lent
// the fleet's next, part-spent window a request past its limit, and a
// `ManualClock` (the gateway's own, in tests) moved on while Redis's window
// still ran dropped a give-back that was due: the next request refused for
// the rest of the minute.
describe.skipIf(!redisAvailable())(
  'a give-back on Redis goes to the window that counted it',
  () => {
    const redis = useRedisServer()

    const setUp = (clock?: ManualClock) => {
      const prefix = `aged-${Math.random()}`
      const options = { limits: { acme: { rpm: 2 } }, keyPrefix: prefix, logger: quiet }
      return {
        key: `${prefix}:rpm:acme`,
        inspector: redis.client({}),
        one: new ProviderLimits({
          ...options,
          redis: redis.client({}),
          ...(clock ? { clock } : {}),
        }),
        other: new ProviderLimits({ ...options, redis: redis.client({}) }),
      }
    }

    // Simulated by hand at once: in real time the next window starts once the
    // count's has expired, and ends a whole window after it.
    for (const ageMs of [1_000, 30_000, 59_000]) {
      it(`gives nothing to the window another process started since (${ageMs / 1000} s into it): that window admits the limit, not more`, async () => {
        const { key, inspector, one, other } = setUp()
        const counted = await one.count('acme', 1)
        expect(counted.admitted).toBe(true)
        await nextWindowFilled(inspector, other, key, ageMs)

        if (counted.admitted) await counted.giveBack?.()

        expect(Number(await inspector.get(key))).toBe(2)
        expect(
          (await other.tryAcquire('acme', 1)).admitted,
          'admitted past the RPM limit in the new window',
        ).toBe(false)
      })
    }

    it('gives nothing to the next window when its count was read late (an event loop stalled past the window)', async () => {
      const { key, inspector, other } = setUp()
      // The count's reply waits while the fleet moves on: its window ends,
      // the next one starts, is filled and is 30 s old by the time it is read.
      const client = redis.client({})
      let gate: Promise<void> | undefined
      const evalsha = client.evalsha.bind(client) as (...args: unknown[]) => Promise<unknown>
      Object.assign(client, {
        evalsha: async (...args: unknown[]) => {
          const held = gate
          const reply = await evalsha(...args)
          await held
          return reply
        },
      })
      const one = new ProviderLimits({
        limits: { acme: { rpm: 2 } },
        keyPrefix: key.slice(0, -':rpm:acme'.length),
        logger: quiet,
        redis: client,
      })
      let resume = () => {}
      gate = new Promise<void>((resolve) => {
        resume = resolve
      })
      const pending = one.count('acme', 1)
      gate = undefined
      // The count ran on Redis (the key holds it); its reply is not read yet.
      await expect.poll(() => inspector.get(key)).toBe('1')
      await nextWindowFilled(inspector, other, key, 30_000)
      resume()
      const counted = await pending
      expect(counted.admitted).toBe(true)

      if (counted.admitted) await counted.giveBack?.()

      expect(Number(await inspector.get(key))).toBe(2)
    })

    it('gives back to its own window when the limits run on a ManualClock moved past the window (Redis has not)', async () => {
      const clock = new ManualClock()
      const { key, inspector, one } = setUp(clock)
      const admission = new Admission({ limits: one, logger: quiet, clock })
      const first = await admission.acquire({ provider: 'acme' })
      expect((await one.tryAcquire('acme', 1)).admitted).toBe(true)
      // The test drives its deadlines and cooldowns on the clock: no real time passes.
      clock.advance(61_000)

      first.release({ sent: false })
      await expect.poll(() => inspector.get(key)).toBe('1')

      expect((await one.tryAcquire('acme', 1)).admitted).toBe(true)
    })

    it('still gives back to its own window while that window lasts', async () => {
      const { key, inspector, one } = setUp()
      const counted = await one.count('acme', 1)
      expect((await one.tryAcquire('acme', 1)).admitted).toBe(true)

      if (counted.admitted) await counted.giveBack?.()

      expect(Number(await inspector.get(key))).toBe(1)
      expect((await one.tryAcquire('acme', 1)).admitted).toBe(true)
      expect((await one.tryAcquire('acme', 1)).admitted).toBe(false)
    })

    it('a TPM give-back, too, goes to its own window and not to the next', async () => {
      const prefix = `aged-tpm-${Math.random()}`
      const options = { limits: { acme: { tpm: 1000 } }, keyPrefix: prefix, logger: quiet }
      const key = `${prefix}:tpm:acme`
      const inspector = redis.client({})
      const one = new ProviderLimits({ ...options, redis: redis.client({}) })
      const other = new ProviderLimits({ ...options, redis: redis.client({}) })

      const own = await one.count('acme', 400)
      const late = await one.count('acme', 400)
      if (own.admitted) await own.giveBack?.()
      expect(Number(await inspector.get(key))).toBe(400)

      await inspector.del(key)
      expect((await other.tryAcquire('acme', 900)).admitted).toBe(true)
      await inspector.pexpire(key, 30_000)
      if (late.admitted) await late.giveBack?.()

      expect(Number(await inspector.get(key))).toBe(900)
      expect((await other.tryAcquire('acme', 400)).admitted).toBe(false)
    })
  },
)
