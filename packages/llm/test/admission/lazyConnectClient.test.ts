import { Deadline } from '@hourglass/core'
import { closedPort, redisAvailable } from '@hourglass/testkit'
import type { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { RedisCooldownStore } from '../../src/admission/RedisCooldownStore.js'
import type { NormalizedError } from '../../src/types.js'
import { useRedisServer } from './support/redisServer.js'

const available = redisAvailable()
if (!available) {
  console.warn(
    '\n!!! redis-server is not on PATH: the lazyConnect client tests are SKIPPED. Install redis-server (CI does) to run them. !!!\n',
  )
}

/** The ioredis options these tests set. */
interface ClientOptions {
  lazyConnect?: boolean
  enableOfflineQueue?: boolean
  retryStrategy?: () => null
}

/** The fail-fast production setting: connect on first use, never queue a command while disconnected. */
const FAIL_FAST: ClientOptions = { lazyConnect: true, enableOfflineQueue: false }

/**
 * A client passed in as production code makes it — `lazyConnect: true`,
 * `enableOfflineQueue: false` — and handed over without `await
 * client.connect()`. ioredis dials on the first command and refuses that
 * command ("Stream isn't writeable and enableOfflineQueue options is
 * false"): the store's first commands failed, admission fell back to its
 * own process, and the first cooldown it wrote was never shared.
 */
describe.skipIf(!available)(
  'a Redis client nobody connected (lazyConnect, no offline queue)',
  () => {
    const redis = useRedisServer()
    const client = (options: ClientOptions = FAIL_FAST, url?: string): Redis =>
      redis.client(options, url)

    /** `c` with its `connect()` calls counted (ioredis's own dial on a first command included). */
    function countingConnects(c: Redis): { readonly calls: number } {
      const counter = { calls: 0 }
      const connect = c.connect.bind(c)
      c.connect = (...args: Parameters<Redis['connect']>) => {
        counter.calls++
        return connect(...args)
      }
      return counter
    }

    /** What another process on the same Redis reads of `keyId`'s cooldown. */
    function elsewhere(keyPrefix: string, provider: string, keyId: string): Promise<number[]> {
      const other = client({})
      return new RedisCooldownStore(other, { keyPrefix }).remaining(provider, [keyId])
    }

    it("is connected by the store's first command: the cooldown it writes is read by another process", async () => {
      const c = client()
      expect(c.status).toBe('wait')
      const keyPrefix = `lazy:${Math.random()}:`
      const store = new RedisCooldownStore(c, {
        keyPrefix,
        commandTimeoutMs: Number.POSITIVE_INFINITY,
      })
      await expect(store.extend('openai', 'k1', 60_000, 'rate_limited (429)')).resolves.toEqual({
        remainingMs: 60_000,
        extended: true,
      })
      expect(c.status).toBe('ready')
      const [left] = await elsewhere(keyPrefix, 'openai', 'k1')
      expect(left).toBeGreaterThan(0)
    })

    it('concurrent first commands of the store and the limits on one client connect it once, and all go to Redis', async () => {
      const c = client()
      const connects = countingConnects(c)
      const keyPrefix = `lazy-shared:${Math.random()}:`
      const warnings: string[] = []
      const store = new RedisCooldownStore(c, {
        keyPrefix,
        commandTimeoutMs: Number.POSITIVE_INFINITY,
      })
      const limits = new ProviderLimits({
        limits: { openai: { rpm: 2 } },
        redis: c,
        keyPrefix: `${keyPrefix}limits`,
        redisCommandTimeoutMs: Number.POSITIVE_INFINITY,
        logger: { warn: (m) => warnings.push(m) },
      })
      const [read, written, ...counted] = await Promise.all([
        store.remaining('openai', ['k1']),
        store.extend('openai', 'k2', 60_000, 'rate_limited (429)'),
        limits.tryAcquire('openai', 0),
        limits.tryAcquire('openai', 0),
        limits.tryAcquire('openai', 0),
      ])
      expect(connects.calls).toBe(1)
      expect(read).toEqual([0])
      expect(written.extended).toBe(true)
      // Counted in Redis, not by this process's local share: the third is refused by the shared limit.
      expect(counted.map((d) => d.admitted)).toEqual([true, true, false])
      expect(warnings).toEqual([])
      expect(limits.degraded).toBe(false)
      expect((await elsewhere(keyPrefix, 'openai', 'k2'))[0]).toBeGreaterThan(0)
    })

    it('a client dialled at construction (no lazyConnect, no offline queue) used at once: its first command waits for the connection', async () => {
      const c = client({ enableOfflineQueue: false })
      expect(c.status).toBe('connecting')
      const keyPrefix = `eager:${Math.random()}:`
      const store = new RedisCooldownStore(c, {
        keyPrefix,
        commandTimeoutMs: Number.POSITIVE_INFINITY,
      })
      await expect(store.extend('openai', 'k1', 60_000, 'x')).resolves.toMatchObject({
        extended: true,
      })
      expect((await elsewhere(keyPrefix, 'openai', 'k1'))[0]).toBeGreaterThan(0)
    })

    it("admission's first call on such a client reads and writes the shared cooldowns: no 'store unavailable', and the 429 it learns is another instance's", async () => {
      const keyPrefix = `lazy-admission:${Math.random()}:`
      const warnings: string[] = []
      const one = new Admission({
        store: new RedisCooldownStore(client(), { keyPrefix }),
        logger: { warn: (m) => warnings.push(m) },
      })
      const two = new Admission({
        store: new RedisCooldownStore(client(), { keyPrefix }),
        logger: { warn: (m) => warnings.push(m) },
      })
      using deadline = Deadline.after(10_000)
      const target = { provider: 'openai', keys: ['sk-one'], deadline, neededMs: 0 }
      const permit = await one.acquire(target)
      const error: NormalizedError = {
        kind: 'rate_limited',
        status: 429,
        retryable: true,
        retryAfterMs: 30_000,
        message: 'slow down',
      }
      await permit.report({ ok: false, error })
      // The other instance never sent a request: it learns the limit from Redis and refuses.
      await expect(two.acquire(target)).rejects.toMatchObject({ name: 'RateLimitedError' })
      expect(warnings).toEqual([])
    })

    it.each([
      ['lazyConnect', FAIL_FAST],
      ['dialled at construction', { enableOfflineQueue: false }],
    ] as const)(
      '%s, Redis unreachable: the first command fails as soon as the first connection does, not at the command timeout',
      async (_, options) => {
        const c = client(
          { ...options, retryStrategy: () => null },
          `redis://127.0.0.1:${await closedPort()}`,
        )
        // No command timeout: a store waiting for a `ready` that never comes would hold the test.
        const store = new RedisCooldownStore(c, { commandTimeoutMs: Number.POSITIVE_INFINITY })
        await expect(store.remaining('openai', ['k1'])).rejects.toThrow()
      },
    )
  },
)
