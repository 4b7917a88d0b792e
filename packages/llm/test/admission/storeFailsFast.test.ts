import { Deadline, ManualClock } from '@hourglass/core'
import { type RedisServer, redisAvailable, startRedis } from '@hourglass/testkit'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { RedisCooldownStore } from '../../src/admission/RedisCooldownStore.js'
import { callModel } from '../../src/call/callModel.js'
import { isStoreTimeout } from '../../src/errors/StoreTimeoutError.js'
import { useFakes, user } from '../call/support/fakes.js'

const available = redisAvailable()
if (!available) {
  console.warn(
    '\n!!! redis-server is not on PATH: the cooldown-store fail-fast tests are SKIPPED. Install redis-server (CI does) to run them. !!!\n',
  )
}

/**
 * The setup docs/limits.md shows — `new Redis(url)`, no fail-fast settings,
 * or BullMQ's `maxRetriesPerRequest: null` — on a Redis that dies or
 * freezes: calls are answered by the provider on what the process knows,
 * and the store's failure is said once. Before, ioredis queued the store's
 * command offline: every call waited out its deadline with nothing sent,
 * and a call with none waited for good.
 */
describe.skipIf(!available)(
  'cooldowns and RPM/TPM limits on a default ioredis client fail over when Redis goes away',
  () => {
    const fakes = useFakes()
    let redis: RedisServer
    const clients: Redis[] = []

    beforeAll(async () => {
      redis = await startRedis()
    })
    afterAll(async () => {
      await redis?.stop()
    })
    /** Set by `killRedis()`: the next test needs the server started again. */
    let killed = false
    const killRedis = async () => {
      killed = true
      await redis.kill()
    }
    afterEach(async () => {
      for (const client of clients.splice(0)) client.disconnect()
      if (redis) {
        // A thawed server answers again; only a killed one is started anew
        // (each test uses keys of its own, so nothing else carries over).
        redis.thaw()
        if (killed) await redis.restart().catch(() => {})
        killed = false
      }
    })

    /**
     * The store's and the limits' bound on an unanswered command in these
     * tests, instead of the 1000 ms default (checked on its own below): each
     * case waits it out once. Still ample for a healthy loopback Redis to
     * answer the setup's first call on a loaded machine.
     */
    const COMMAND_TIMEOUT_MS = 300

    async function setup(
      options: { maxRetriesPerRequest?: null } = {},
      { store = true, limits = false }: { store?: boolean; limits?: boolean } = {},
    ) {
      const client = new Redis(redis.url, options)
      client.on('error', () => {})
      clients.push(client)
      await client.ping()
      const warnings: string[] = []
      const logger = { warn: (m: string) => warnings.push(m) }
      const admission = new Admission({
        ...(store
          ? {
              store: new RedisCooldownStore(client, {
                keyPrefix: `ff:${Math.random()}:`,
                commandTimeoutMs: COMMAND_TIMEOUT_MS,
              }),
            }
          : {}),
        logger,
        ...(limits
          ? {
              limits: new ProviderLimits({
                limits: { openai: { rpm: 500, tpm: 200_000 } },
                redis: client,
                instances: 3,
                redisCommandTimeoutMs: COMMAND_TIMEOUT_MS,
                logger,
              }),
            }
          : {}),
      })
      const fake = await fakes.start()
      const model = fakes.adapter(
        openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-fail-fast-key', model: 'm' }),
      )
      const call = (deadline: Deadline | undefined) =>
        callModel({
          models: [model],
          request: { messages: [user('hi')], maxTokens: 5 },
          deadline,
          limits: { admission },
        })
      // Redis up: the store is asked, nothing is said.
      using first = Deadline.after(30_000)
      await call(first)
      expect(warnings).toEqual([])
      return { fake, call, warnings }
    }

    it('Redis killed: a call with a deadline is answered by the provider (well before it), one warning; so is a call with none', async () => {
      const { fake, call, warnings } = await setup({}, { limits: true })
      await killRedis()
      using deadline = Deadline.after(30_000)
      const response = await call(deadline)
      expect(response.text).toBeDefined()
      expect(deadline.expired).toBe(false)
      expect(fake.requests).toHaveLength(2)
      // No deadline at all: answered too, not held until Redis comes back.
      await call(undefined)
      expect(fake.requests).toHaveLength(3)
      expect(warnings.filter((w) => /cooldown store unavailable/.test(w))).toHaveLength(1)
    }, 60_000)

    it('Redis killed, client with maxRetriesPerRequest: null (as BullMQ requires): a call with no deadline is answered', async () => {
      const { fake, call, warnings } = await setup({ maxRetriesPerRequest: null })
      await killRedis()
      await call(undefined)
      await call(undefined)
      expect(fake.requests).toHaveLength(3)
      expect(warnings.filter((w) => /cooldown store unavailable/.test(w))).toHaveLength(1)
    }, 60_000)

    it('Redis frozen (connected, ready, answering nothing): a call with no deadline is answered once the store times out, one warning', async () => {
      const { fake, call, warnings } = await setup()
      redis.freeze()
      await call(undefined)
      await call(undefined)
      expect(fake.requests).toHaveLength(3)
      expect(warnings).toEqual([
        expect.stringMatching(
          new RegExp(`cooldown store unavailable.*did not answer within ${COMMAND_TIMEOUT_MS} ms`),
        ),
      ])
    }, 60_000)

    it('Redis frozen, RPM/TPM limits on it: a call with no deadline is answered once the count times out (the local share decides)', async () => {
      const { fake, call, warnings } = await setup({}, { store: false, limits: true })
      redis.freeze()
      await call(undefined)
      await call(undefined)
      expect(fake.requests).toHaveLength(3)
      expect(warnings).toEqual([expect.stringMatching(/Redis unavailable/)])
    }, 60_000)

    it('a store made on a client still making its first connection waits for it: no warning on the first call', async () => {
      const client = new Redis(redis.url)
      client.on('error', () => {})
      clients.push(client)
      expect(client.status).not.toBe('ready')
      const warnings: string[] = []
      const admission = new Admission({
        store: new RedisCooldownStore(client, { keyPrefix: `ff:${Math.random()}:` }),
        logger: { warn: (m) => warnings.push(m) },
      })
      const fake = await fakes.start()
      const model = fakes.adapter(
        openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-fail-fast-key', model: 'm' }),
      )
      using deadline = Deadline.after(30_000)
      await callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 5 },
        deadline,
        limits: { admission },
      })
      expect(warnings).toEqual([])
    })

    it('limits made on a client still making its first connection wait for it: no warning, the count is shared', async () => {
      // rate-limiter-flexible's rejectIfRedisNotReady counted the first calls
      // of every process locally and said "Redis unavailable" on a healthy Redis.
      const client = new Redis(redis.url)
      client.on('error', () => {})
      clients.push(client)
      expect(client.status).not.toBe('ready')
      const warnings: string[] = []
      const prefix = `ff-limits:${Math.random()}`
      const admission = new Admission({
        logger: { warn: (m) => warnings.push(m) },
        limits: new ProviderLimits({
          limits: { openai: { rpm: 500 } },
          redis: client,
          instances: 3,
          keyPrefix: prefix,
          logger: { warn: (m: string) => warnings.push(m) },
        }),
      })
      const fake = await fakes.start()
      const model = fakes.adapter(
        openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-fail-fast-key', model: 'm' }),
      )
      using deadline = Deadline.after(30_000)
      await callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 5 },
        deadline,
        limits: { admission },
      })
      expect(warnings).toEqual([])
      // Counted in Redis, not only on this process.
      expect(await client.keys(`${prefix}*`)).not.toEqual([])
    })

    it('commandTimeoutMs is 1000 ms unless given: a command unanswered that long rejects, naming it', async () => {
      const clock = new ManualClock()
      const never = () => new Promise<never>(() => {})
      const store = new RedisCooldownStore(
        { status: 'ready', evalsha: never, eval: never },
        { clock },
      )
      let settled: unknown
      const read = store.remaining('openai', ['k']).catch((error: unknown) => error)
      void read.then((outcome) => (settled = outcome))
      clock.advance(999)
      await new Promise((resolve) => setImmediate(resolve))
      expect(settled).toBeUndefined()
      clock.advance(1)
      const error = await read
      expect(isStoreTimeout(error)).toBe(true)
      expect(String(error)).toMatch(
        /Redis did not answer within 1000 ms \(RedisCooldownStore commandTimeoutMs\)/,
      )
    })

    it('commandTimeoutMs must be a number of ms above 0', () => {
      const client = { evalsha: async () => [], eval: async () => [] }
      expect(() => new RedisCooldownStore(client, { commandTimeoutMs: 0 })).toThrow(RangeError)
      expect(() => new RedisCooldownStore(client, { commandTimeoutMs: Number.NaN })).toThrow(
        /commandTimeoutMs must be a number of ms above 0/,
      )
      expect(
        () => new RedisCooldownStore(client, { commandTimeoutMs: Number.POSITIVE_INFINITY }),
      ).not.toThrow()
      expect(
        () => new ProviderLimits({ limits: {}, redis: client, redisCommandTimeoutMs: -1 }),
      ).toThrow(/redisCommandTimeoutMs must be a number of ms above 0/)
    })
  },
)
