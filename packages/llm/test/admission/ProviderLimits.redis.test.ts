import { ManualClock } from '@hourglass/core'
import { redisAvailable } from '@hourglass/testkit'
import type { Redis } from 'ioredis'
import { RateLimiterRedis } from 'rate-limiter-flexible'
import { describe, expect, it } from 'vitest'
import { LIMIT_SCRIPT, ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { useRedisServer } from './support/redisServer.js'

const available = redisAvailable()
if (!available) {
  console.warn(
    '\n!!! redis-server is not on PATH: the Redis ProviderLimits tests are SKIPPED. Install redis-server (CI does) to run them. !!!\n',
  )
}

/** The counter script's runs (`EVALSHA`, or `EVAL` after `NOSCRIPT`): `sha|script, 1, key, points, …`. */
const SCRIPT_RUNS = new Set<PropertyKey>(['evalsha', 'eval'])

/**
 * An ioredis client whose give-backs (the counter script run with negative
 * points) are held until the test lets them go: what a slow round trip does
 * to a give-back sent as the window ends.
 */
function holdingGiveBacks(client: Redis) {
  const held: Array<() => void> = []
  let onHeld: (() => void) | undefined
  const proxy = new Proxy(client, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver)
      if (!SCRIPT_RUNS.has(name) || typeof value !== 'function') return value
      return async (...args: unknown[]) => {
        const told = onHeld
        if (told !== undefined && Number(args[3]) < 0) {
          onHeld = undefined
          await new Promise<void>((resolve) => {
            held.push(resolve)
            told()
          })
        }
        return value.apply(target, args)
      }
    },
  })
  return {
    client: proxy,
    /** Holds the next give-back; resolves once it is being held. */
    nextHeld: () => new Promise<void>((resolve) => (onHeld = resolve)),
    release: () => {
      for (const go of held.splice(0)) go()
    },
  }
}

/**
 * An ioredis client on which, once armed, right after the next count of
 * `key` the window is found at 0: it ended between the count and the
 * give-back, and the new window's requests were given back too.
 */
function windowAtZeroAfterCount(client: Redis, key: string) {
  let armed = false
  const proxy = new Proxy(client, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver)
      if (!SCRIPT_RUNS.has(name) || typeof value !== 'function') return value
      return async (...args: unknown[]) => {
        const result = await value.apply(target, args)
        if (armed && args[2] === key && Number(args[3]) > 0) {
          armed = false
          await target.set(key, 0, 'EX', 60)
        }
        return result
      }
    },
  })
  return { client: proxy, arm: () => (armed = true) }
}

describe.skipIf(!available)('ProviderLimits on a real Redis', () => {
  const redis = useRedisServer()

  async function client(
    options: { commandTimeout?: number; keyPrefix?: string } = {},
  ): Promise<Redis> {
    const c = redis.client({ lazyConnect: true, enableOfflineQueue: false, ...options })
    await c.connect()
    return c
  }

  /** Admitted requests out of `count` tries, one after another. */
  async function admitted(limits: ProviderLimits, count: number, tokens = 1): Promise<number> {
    let n = 0
    for (let i = 0; i < count; i++) if ((await limits.tryAcquire('acme', tokens)).admitted) n++
    return n
  }

  it('a request refused as the window ends gives nothing to the next window: it admits the limit, not more', async () => {
    const inspector = await client()
    const gate = holdingGiveBacks(await client())
    const prefix = `refused-${Math.random()}`
    const limits = new ProviderLimits({
      limits: { acme: { rpm: 2 } },
      windowMs: 1000,
      redis: gate.client,
      keyPrefix: prefix,
      logger: { warn: () => {} },
    })
    expect(await admitted(limits, 2)).toBe(2)
    const held = gate.nextHeld()
    const third = limits.tryAcquire('acme', 1)
    // The window ends between the refusal and anything sent after it.
    await Promise.race([third, held])
    await inspector.del(`${prefix}:rpm@1s:acme`)
    gate.release()
    expect((await third).admitted).toBe(false)

    expect(await admitted(limits, 5)).toBe(2)
    expect(Number(await inspector.get(`${prefix}:rpm@1s:acme`))).toBeGreaterThanOrEqual(0)
  })

  it("a request's share given back after a TPM refusal never starts the next window below zero", async () => {
    const inspector = await client()
    const gate = holdingGiveBacks(await client())
    const prefix = `given-back-${Math.random()}`
    const limits = new ProviderLimits({
      limits: { acme: { rpm: 2, tpm: 100 } },
      windowMs: 1000,
      redis: gate.client,
      keyPrefix: prefix,
      logger: { warn: () => {} },
    })
    expect(await admitted(limits, 1, 90)).toBe(1)
    // Fits the RPM limit, not the TPM one: its request is given back.
    const held = gate.nextHeld()
    const big = limits.tryAcquire('acme', 50)
    await held
    // Both windows end while the give-back is on its way.
    await inspector.del(`${prefix}:rpm@1s:acme`, `${prefix}:tpm@1s:acme`)
    gate.release()
    expect(await big).toMatchObject({ admitted: false, limit: 'tpm' })

    expect(await admitted(limits, 5)).toBe(2)
    // And nothing is left without an expiry.
    for (const key of await inspector.keys(`${prefix}:*`)) {
      expect(await inspector.pttl(key)).toBeGreaterThan(0)
    }
  })

  it("a request's share given back after its window ended never goes to the window another process started since: that window admits the limit, not more", async () => {
    const inspector = await client()
    const gate = holdingGiveBacks(await client())
    const prefix = `given-back-late-${Math.random()}`
    const options = {
      limits: { acme: { rpm: 2, tpm: 100 } },
      windowMs: 5000,
      keyPrefix: prefix,
      logger: { warn: () => {} },
    }
    const one = new ProviderLimits({ ...options, redis: gate.client })
    const other = new ProviderLimits({ ...options, redis: await client() })
    expect(await admitted(one, 1, 90)).toBe(1)
    // The window is ending as the next request is counted in it.
    await inspector.pexpire(`${prefix}:rpm@5s:acme`, 1000)
    const held = gate.nextHeld()
    const big = one.tryAcquire('acme', 50)
    await held
    // Both windows end (here at once) while the give-back is on its way; the other process starts the next.
    await inspector.del(`${prefix}:rpm@5s:acme`, `${prefix}:tpm@5s:acme`)
    expect(await admitted(other, 2)).toBe(2)
    gate.release()
    expect(await big).toMatchObject({ admitted: false, limit: 'tpm' })

    expect(await admitted(other, 3), 'admitted past the RPM limit in the new window').toBe(0)
    expect(Number(await inspector.get(`${prefix}:rpm@5s:acme`))).toBe(2)
  })

  // A give-back to a window whose count is 0 (it ended between the count and
  // the give-back): `-0` to INCRBY was a Redis error, read as Redis unavailable.
  it('the counter script gives nothing back and answers the count and its expiry', async () => {
    const c = await client()
    const key = `zero-${Math.random()}`
    await c.set(key, 0, 'EX', 60)
    const [count, ttl] = (await c.eval(LIMIT_SCRIPT, 1, key, -1, 60, 5)) as [number, number]
    expect(count).toBe(0)
    expect(ttl).toBeGreaterThan(0)
    expect(await c.get(key)).toBe('0')
  })

  it('a TPM refusal whose request lands on a window at 0 is no Redis failure: no warning, not degraded, limits still shared', async () => {
    const prefix = `given-back-zero-${Math.random()}`
    const warnings: string[] = []
    const c = await client()
    const rolling = windowAtZeroAfterCount(c, `${prefix}:rpm:acme`)
    const limits = new ProviderLimits({
      limits: { acme: { rpm: 5, tpm: 100 } },
      redis: rolling.client,
      keyPrefix: prefix,
      logger: { warn: (message) => warnings.push(message) },
    })
    expect((await limits.tryAcquire('acme', 60)).admitted).toBe(true)
    rolling.arm()
    // Counted as a request (then its window is found at 0), refused by TPM: given back.
    expect(await limits.tryAcquire('acme', 60)).toMatchObject({ admitted: false, limit: 'tpm' })
    expect(warnings).toEqual([])
    expect(limits.degraded).toBe(false)
    expect(await c.get(`${prefix}:rpm:acme`)).toBe('0')
    // The next request is counted in Redis, where the give-back left the window.
    expect((await limits.tryAcquire('acme', 10)).admitted).toBe(true)
    expect(await c.get(`${prefix}:rpm:acme`)).toBe('1')
    expect(warnings).toEqual([])
  })

  // One ioredis client per app is the common case, and the app may count its
  // own limits with rate-limiter-flexible's RateLimiterRedis on it. Both
  // registered a command named `rlflxIncr` on the client: the last one made
  // ran for both.
  describe("on a client the app's own rate-limiter-flexible limiter also uses", () => {
    it('a limiter the app makes after ours leaves our counting alone: a refused request still takes nothing', async () => {
      const shared = await client()
      const prefix = `shared-after-${Math.random()}`
      const limits = new ProviderLimits({
        limits: { acme: { tpm: 100 } },
        redis: shared,
        keyPrefix: prefix,
        logger: { warn: () => {} },
      })
      const app = new RateLimiterRedis({
        storeClient: shared,
        points: 5,
        duration: 60,
        keyPrefix: `${prefix}:app`,
      })
      await app.consume('login:alice')
      expect((await limits.tryAcquire('acme', 90)).admitted).toBe(true)
      expect(await limits.tryAcquire('acme', 50)).toMatchObject({ admitted: false, limit: 'tpm' })
      // The refused 50 took nothing: 10 of the 100 are still there.
      expect((await limits.tryAcquire('acme', 10)).admitted).toBe(true)
      expect(await shared.get(`${prefix}:tpm:acme`)).toBe('100')
    })

    it("our limits leave the app's limiter as rate-limiter-flexible counts it: a penalty over its limit still counts", async () => {
      const shared = await client()
      const prefix = `shared-before-${Math.random()}`
      const app = new RateLimiterRedis({
        storeClient: shared,
        points: 3,
        duration: 60,
        keyPrefix: `${prefix}:app`,
      })
      const appCommand = (shared as unknown as { rlflxIncr: unknown }).rlflxIncr
      const limits = new ProviderLimits({
        limits: { acme: { rpm: 10 } },
        redis: shared,
        keyPrefix: prefix,
        logger: { warn: () => {} },
      })
      expect((await limits.tryAcquire('acme', 1)).admitted).toBe(true)
      // rate-limiter-flexible's penalty always counts (5 failed logins, say): the key is over its 3.
      await app.penalty('login:alice', 5)
      await expect(app.consume('login:alice')).rejects.toMatchObject({ remainingPoints: 0 })
      expect(await shared.get(`${prefix}:app:login:alice`)).toBe('6')
      // Nothing of ours was registered on the app's client.
      expect((shared as unknown as { rlflxIncr: unknown }).rlflxIncr).toBe(appCommand)
    })

    it("counts under the client's own keyPrefix, as every other command on it", async () => {
      const prefixed = await client({ keyPrefix: 'app1:' })
      const inspector = await client()
      const prefix = `client-prefix-${Math.random()}`
      const limits = new ProviderLimits({
        limits: { acme: { rpm: 2 } },
        redis: prefixed,
        keyPrefix: prefix,
        logger: { warn: () => {} },
      })
      expect(await admitted(limits, 3)).toBe(2)
      expect(await inspector.get(`app1:${prefix}:rpm:acme`)).toBe('2')
      expect(await inspector.exists(`${prefix}:rpm:acme`)).toBe(0)
    })
  })

  it('a frozen Redis (connected, answering nothing) costs one command timeout: the requests after it decide locally at once', async () => {
    // ioredis keeps a timed-out command and Redis runs it once thawed: what
    // Redis counts after the thaw is every command sent during the freeze.
    const counters = await client()
    const inspector = await client()
    const warnings: string[] = []
    const prefix = `frozen-${Math.random()}`
    const limits = new ProviderLimits({
      limits: { acme: { rpm: 100, tpm: 10_000 } },
      redis: counters,
      keyPrefix: prefix,
      instances: 2,
      // Time stands still: the back-off after the timeout does not end during the test.
      clock: new ManualClock(),
      logger: { warn: (message) => warnings.push(message) },
    })
    expect((await limits.tryAcquire('acme', 10)).admitted).toBe(true)
    // Only now a command timeout (ioredis reads it per command): a busy machine
    // must not time out the count above, made before the freeze.
    counters.options.commandTimeout = 60
    redis.server.freeze()
    try {
      // The first request's RPM count times out; its TPM count and every later request stay local.
      expect(await admitted(limits, 6, 10)).toBe(6)
      expect(limits.degraded).toBe(true)
    } finally {
      redis.server.thaw()
    }
    // Answered after everything this client sent while Redis was frozen.
    await counters.ping()
    expect(await inspector.get(`${prefix}:rpm:acme`)).toBe('2')
    expect(await inspector.get(`${prefix}:tpm:acme`)).toBe('10')
    expect(warnings).toEqual([expect.stringMatching(/Redis unavailable/)])
  })

  it("instances whose windowMs differ (a deploy that changes it) count apart: the shorter window neither shortens nor fills the longer's", async () => {
    // 60 s → 10 s and rpm 60 → 10, the same rate, both configs live during
    // the rollout. Counted in one key, the window was whichever instance made
    // it, and the 10 s one cut the 60 s one short (the script's "no window
    // outlasts the window"): the 60 s instances admitted their 60 per 10 s.
    const inspector = await client()
    const quiet = { warn: () => {} }
    for (const tenFirst of [false, true]) {
      const keyPrefix = `windows-${tenFirst}-${Math.random()}`
      const minute = new ProviderLimits({
        limits: { acme: { rpm: 60 } },
        redis: await client(),
        keyPrefix,
        logger: quiet,
      })
      const tenSeconds = new ProviderLimits({
        limits: { acme: { rpm: 10 } },
        windowMs: 10_000,
        redis: await client(),
        keyPrefix,
        logger: quiet,
      })
      const order = tenFirst ? [tenSeconds, minute] : [minute, tenSeconds]
      for (const limits of order) expect(await admitted(limits, 1)).toBe(1)
      expect(await inspector.pttl(`${keyPrefix}:rpm:acme`)).toBeGreaterThan(50_000)
      expect(await inspector.pttl(`${keyPrefix}:rpm@10s:acme`)).toBeLessThanOrEqual(10_000)
      // The minute's window holds its 60, not 60 more per 10 s.
      expect(await admitted(minute, 60)).toBe(59)
    }
  })
})
