import { type RedisServer, redisAvailable, startRedis } from '@hourglass/testkit'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { LIMIT_SCRIPT, ProviderLimits } from '../../src/admission/ProviderLimits.js'

const available = redisAvailable()
if (!available) {
  console.warn(
    '\n!!! redis-server is not on PATH: the give-back-at-zero tests are SKIPPED. Install redis-server (CI does) to run them. !!!\n',
  )
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
      if (name !== 'rlflxIncr' || typeof value !== 'function') return value
      return async (args: string[]) => {
        const result = await value.call(target, args)
        if (armed && args[0] === key && Number(args[1]) > 0) {
          armed = false
          await target.set(key, 0, 'EX', 60)
        }
        return result
      }
    },
  })
  return { client: proxy, arm: () => (armed = true) }
}

describe.skipIf(!available)('a give-back to a window whose count is 0 (real Redis)', () => {
  let redis: RedisServer
  const clients: Redis[] = []

  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(async () => {
    await redis?.stop()
  })
  afterEach(() => {
    for (const c of clients.splice(0)) c.disconnect()
  })

  async function client(): Promise<Redis> {
    const c = new Redis(redis.url, { lazyConnect: true, enableOfflineQueue: false })
    c.on('error', () => {})
    clients.push(c)
    await c.connect()
    return c
  }

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
})
