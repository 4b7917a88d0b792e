import { Deadline } from '@hourglass/core'
import { type RedisServer, redisAvailable, startRedis } from '@hourglass/testkit'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { RedisCooldownStore } from '../../src/admission/RedisCooldownStore.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'

const available = redisAvailable()
if (!available) {
  console.warn(
    '\n!!! redis-server is not on PATH: the lost-cooldown tests are SKIPPED. Install redis-server (CI does) to run them. !!!\n',
  )
}

const KEY = 'sk-fleet-key-DDDDDDDDDDDDDDDDDDDD'
const WHERE = { endpoint: 'https://acme.example/v1', model: 'big' }
const LIMITED = { kind: 'rate_limited', status: 429, retryAfterMs: 30_000 } as const

/**
 * Two instances of a fleet on one Redis, which loses what it held — a
 * restart without persistence, a failover to a replica that had not caught
 * up, an eviction — in the middle of a 429 storm. The instance that learned
 * the limit still holds it; before, it never wrote it again, so every other
 * instance (and every new one) sent to the provider to learn the limit
 * anew for as long as the cooldown had left: one 429 per instance, per
 * scope, against a provider that had asked everyone to wait. The same for a
 * cooldown learned while Redis was down (its write failed).
 */
describe.skipIf(!available)(
  'a cooldown the store lost is written again by the instance that holds it',
  () => {
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
      const c = new Redis(redis.url, { maxRetriesPerRequest: 0, retryStrategy: () => 20 })
      c.on('error', () => {})
      clients.push(c)
      await c.ping()
      return c
    }

    async function instances(prefix: string) {
      const make = async () => {
        const c = await client()
        return {
          client: c,
          admission: new Admission({
            store: new RedisCooldownStore(c, { keyPrefix: prefix }),
            logger: { warn: () => {} },
            defaultNeededMs: 0,
          }),
        }
      }
      return [await make(), await make()] as const
    }

    /** One call's admission, with a deadline far shorter than the cooldown: refused if cooling. */
    const admits = async (admission: Admission) => {
      using deadline = Deadline.after(2000)
      return await admission.acquire({ provider: 'acme', keys: [KEY], deadline, ...WHERE }).then(
        (permit) => {
          permit.release()
          return true
        },
        (error: unknown) => {
          if (!isRateLimited(error)) throw error
          return false
        },
      )
    }

    const ready = (c: Redis) =>
      c.status === 'ready'
        ? Promise.resolve()
        : new Promise<void>((r) => c.once('ready', () => r()))

    /**
     * The write goes off the call's path, on the instance's own connection: a
     * command sent after it there is answered after it. What is written is
     * what is left of the 30 s, never more.
     */
    async function expectRestored(c: Redis) {
      const keys = await c.keys('*')
      expect(keys, 'written again').toHaveLength(1)
      const ttl = await c.pttl(keys[0] as string)
      expect(ttl).toBeGreaterThan(20_000)
      expect(ttl).toBeLessThanOrEqual(30_000)
    }

    it('after Redis restarts empty, the next call of the instance that learned the limit shares it again', async () => {
      const prefix = `lost1:${Math.random()}:`
      const [a, b] = await instances(prefix)
      await a.admission.report('acme', KEY, { ok: false, error: LIMITED }, WHERE)
      expect(await admits(b.admission), 'shared before the restart').toBe(false)

      await redis.kill()
      await redis.restart()
      await Promise.all([ready(a.client), ready(b.client)])
      expect(await a.client.dbsize(), 'the restarted Redis is empty').toBe(0)

      // Instance A, still cooling, is asked again (its next call in the storm)…
      expect(await admits(a.admission)).toBe(false)
      await expectRestored(a.client)
      // …so an instance that had not learned it (one started since, or whose idle
      // slots were dropped) does not send into the storm; B still holds it too.
      const [c] = await instances(prefix)
      expect(await admits(c.admission), 'a new instance sends into the storm').toBe(false)
      expect(await admits(b.admission)).toBe(false)
    })

    it('a limit learned while Redis was down is shared once Redis is back', async () => {
      const prefix = `lost2:${Math.random()}:`
      const [a, b] = await instances(prefix)
      await redis.kill()
      await a.admission.report('acme', KEY, { ok: false, error: LIMITED }, WHERE)
      await redis.restart()
      await Promise.all([ready(a.client), ready(b.client)])

      expect(await admits(a.admission)).toBe(false)
      await expectRestored(a.client)
      const [c] = await instances(prefix)
      expect(await admits(c.admission), 'a new instance sends into the storm').toBe(false)
    })
  },
)
