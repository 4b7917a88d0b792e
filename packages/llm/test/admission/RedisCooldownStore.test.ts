import { type Clock, Deadline, systemClock } from '@hourglass/core'
import { type RedisServer, redisAvailable, startRedis } from '@hourglass/testkit'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { RedisCooldownStore } from '../../src/admission/RedisCooldownStore.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'
import { driveOne, WaitClock } from '../support/waitClock.js'
import { callModel } from './support/callModel.js'
import { type LimitedProvider, startLimitedProvider } from './support/limitedProvider.js'

const available = redisAvailable()
if (!available) {
  console.warn(
    '\n!!! redis-server is not on PATH: the RedisCooldownStore tests are SKIPPED. Install redis-server (CI does) to run them. !!!\n',
  )
}

const KEY = 'sk-shared-key-CCCCCCCCCCCCCCCCCCCC'

describe.skipIf(!available)('RedisCooldownStore (real redis-server)', () => {
  let redis: RedisServer
  const clients: Redis[] = []
  const servers: LimitedProvider[] = []

  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(async () => {
    await redis?.stop()
  })
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()))
    for (const client of clients.splice(0)) client.disconnect()
  })

  async function client(): Promise<Redis> {
    // No offline queue: while Redis is down a command fails at once instead of waiting for it.
    const c = new Redis(redis.url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => 20,
    })
    c.on('error', () => {})
    clients.push(c)
    await c.connect()
    return c
  }

  it('shares one cooldown between two Admission instances: the second learns the limit without sending', async () => {
    const provider = await startLimitedProvider({ windowMs: 600, retryAfterS: 1 })
    servers.push(provider)
    const prefix = `t1:${Math.random()}:`
    // Instance one on a manual clock, moved only while it waits: its 300 ms are not spent by
    // a busy machine before it has decided.
    const oneClock = new WaitClock()
    const one = new Admission({
      store: new RedisCooldownStore(await client(), { keyPrefix: prefix }),
      defaultNeededMs: 100,
      clock: oneClock,
    })
    // Instance two on the real clock — the cooldown it learns runs out on Redis's own clock
    // (PX), which nothing here can move — recording the waits it arms.
    const waits: number[] = []
    const watched: Clock = {
      realTime: true,
      now: () => systemClock.now(),
      setTimeout(callback, ms, options) {
        if (options?.keepAlive === true) waits.push(ms)
        return systemClock.setTimeout(callback, ms, options)
      },
      clearTimeout: (handle) => systemClock.clearTimeout(handle),
    }
    const two = new Admission({
      store: new RedisCooldownStore(await client(), { keyPrefix: prefix }),
      defaultNeededMs: 100,
      staggerMs: 0,
      clock: watched,
    })

    // Instance one hits the limit and learns `retry-after: 1`; its short call gives up at once.
    const first = await driveOne(
      oneClock,
      callModel(one, {
        provider: 'acme',
        url: provider.url,
        keys: [KEY],
        deadline: Deadline.after(300, { clock: oneClock }),
      }),
    ).catch((e: unknown) => e)
    expect(isRateLimited(first)).toBe(true)
    expect(oneClock.now()).toBe(0) // no wait taken
    expect(provider.requests).toHaveLength(1)

    // Instance two has never sent anything, yet refuses a call that cannot outlast the cooldown…
    const refused = await callModel(two, {
      provider: 'acme',
      url: provider.url,
      keys: [KEY],
      deadline: Deadline.after(400, { clock: watched }),
    }).catch((e: unknown) => e)
    expect(isRateLimited(refused)).toBe(true)
    expect((refused as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(400)
    expect(waits).toEqual([]) // refused at once: no wait armed
    expect(provider.requests).toHaveLength(1)

    // …and waits out the shared cooldown for a call that can, then answers with one request.
    const answered = await callModel(two, {
      provider: 'acme',
      url: provider.url,
      keys: [KEY],
      deadline: Deadline.after(3000, { clock: watched }),
    })
    expect(answered.attempts).toBe(1)
    // What it waited for is the cooldown it learned from Redis (`retry-after: 1`, less what has passed).
    expect(Math.max(...waits)).toBeGreaterThan(400)
    expect(Math.max(...waits)).toBeLessThanOrEqual(1000)
    expect(provider.requests.map((r) => r.status)).toEqual([429, 200])
    expect(provider.requests[1]?.at ?? 0).toBeGreaterThanOrEqual(
      (provider.requests[0]?.at ?? 0) + 900,
    )
  })

  it('shares each cooldown at its scope: a 429 holds back that model on that key in the other instance, an overload every key and model', async () => {
    const prefix = `t5:${Math.random()}:`
    // A manual clock, moved only while an instance waits: the 200 ms deadlines are not spent by
    // a busy machine before the decision (Redis's round trips take no time on it).
    const clock = new WaitClock()
    const make = async () =>
      new Admission({
        store: new RedisCooldownStore(await client(), { keyPrefix: prefix }),
        defaultNeededMs: 0,
        staggerMs: 0,
        clock,
      })
    const [one, two] = [await make(), await make()]
    const target = (model: string, keys: string[]) => ({
      provider: 'acme',
      endpoint: 'https://acme.example/v1',
      keys,
      model,
      deadline: Deadline.after(200, { clock }),
    })
    const where = { endpoint: 'https://acme.example/v1' }
    const limited = { kind: 'rate_limited', status: 429, retryAfterMs: 20_000 } as const
    const refusedBy = (admission: Admission, model: string, keys: string[], endpoint?: string) =>
      driveOne(
        clock,
        admission.acquire({ ...target(model, keys), ...(endpoint ? { endpoint } : {}) }),
      ).then(
        (ticket) => {
          ticket.release()
          return undefined
        },
        (e: unknown) => e,
      )

    // Instance one learns a 429 for big on KEY: instance two refuses big on KEY…
    await one.report('acme', KEY, { ok: false, error: limited }, { ...where, model: 'big' })
    expect(isRateLimited(await refusedBy(two, 'big', [KEY]))).toBe(true)
    // …but not small on KEY, nor big on another key.
    expect(await refusedBy(two, 'small', [KEY])).toBeUndefined()
    expect(await refusedBy(two, 'big', ['sk-other'])).toBeUndefined()

    // An overload (503) is the provider's: every key and model is held back in the other instance.
    await one.report(
      'acme',
      'sk-other',
      { ok: false, error: { kind: 'overloaded', status: 503, retryAfterMs: 20_000 } },
      { ...where, model: 'small' },
    )
    for (const [model, keys] of [
      ['small', [KEY]],
      ['medium', ['sk-third']],
    ] as const) {
      expect(isRateLimited(await refusedBy(two, model, [...keys])), `${model} ${keys}`).toBe(true)
    }
    // A provider of the same name at another base URL is apart from it.
    expect(await refusedBy(two, 'small', [KEY], 'https://eu.acme.example/v1')).toBeUndefined()
  })

  it('extends atomically and never shortens: of concurrent extensions the longest wins', async () => {
    const store = new RedisCooldownStore(await client(), { keyPrefix: `t2:${Math.random()}:` })
    expect(await store.remaining('acme', ['k1', 'k2'])).toEqual([0, 0])
    expect(await store.extend('acme', 'k1', 1000, 'first')).toEqual({
      remainingMs: 1000,
      extended: true,
    })
    const shorter = await store.extend('acme', 'k1', 200, 'shorter')
    expect(shorter.extended).toBe(false)
    expect(shorter.remainingMs).toBeGreaterThan(900)
    const results = await Promise.all(
      [300, 5000, 1500, 4000].map((ms) => store.extend('acme', 'k2', ms, 'race')),
    )
    const [k1, k2] = await store.remaining('acme', ['k1', 'k2'])
    expect(k2).toBeGreaterThan(4900)
    expect(k2).toBeLessThanOrEqual(5000)
    expect(k1).toBeGreaterThan(800)
    expect(results.find((r) => r.remainingMs > 4900 && r.extended)).toBeDefined()
    expect(await store.remaining('other', ['k2'])).toEqual([0])
  })

  it('a key retired for longer than Redis can count (retireMs 1e20: for good, fleet-wide) is retired in the other instance too, and no store failure is said', async () => {
    const prefix = `t5:${Math.random()}:`
    const warnings: string[] = []
    const logger = { warn: (m: string) => warnings.push(m) }
    const one = new Admission({
      store: new RedisCooldownStore(await client(), { keyPrefix: prefix }),
      retireMs: 1e20,
      logger,
    })
    const two = new Admission({
      store: new RedisCooldownStore(await client(), { keyPrefix: prefix }),
      logger,
    })
    await one.report('acme', KEY, { ok: false, error: { kind: 'auth', status: 401 } })
    expect(warnings, 'a store failure said').toEqual([])
    using deadline = Deadline.after(5000)
    const refused = await two.acquire({ provider: 'acme', keys: [KEY], deadline }).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(isRateLimited(refused), 'the other instance sends with the retired key').toBe(true)
    expect((refused as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(1e14)
  })

  it('reloads its script after Redis forgets it (restart or SCRIPT FLUSH)', async () => {
    const c = await client()
    const store = new RedisCooldownStore(c, { keyPrefix: `t3:${Math.random()}:` })
    await store.extend('acme', 'k', 1000, 'x')
    await c.script('FLUSH')
    expect((await store.remaining('acme', ['k']))[0]).toBeGreaterThan(500)
  })

  it('keeps deciding on what the process knows while Redis is down, says so once, and says when it is back', async () => {
    const c = await client()
    const warnings: string[] = []
    // A manual clock, moved only while admission waits: the 100 ms deadlines are not spent by
    // a busy machine (or a client noticing Redis is gone) before the decision.
    const clock = new WaitClock()
    const admission = new Admission({
      store: new RedisCooldownStore(c, { keyPrefix: `t4:${Math.random()}:` }),
      logger: { warn: (m) => warnings.push(m) },
      defaultNeededMs: 0,
      clock,
    })
    const acquire = (keys: string[]) =>
      driveOne(
        clock,
        admission.acquire({ provider: 'acme', keys, deadline: Deadline.after(100, { clock }) }),
      )
    await redis.kill()
    await admission.report('acme', KEY, {
      ok: false,
      error: { kind: 'rate_limited', status: 429, retryAfterMs: 5000 },
    })
    for (let i = 0; i < 3; i++) {
      await expect(acquire([KEY])).rejects.toMatchObject({ code: 'RATE_LIMITED' })
    }
    const free = await acquire(['sk-other'])
    expect(free.key).toBe('sk-other')
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/cooldown store unavailable/)

    const ready = new Promise((resolve) => c.once('ready', resolve))
    await redis.restart()
    await ready
    await acquire(['sk-other'])
    expect(warnings).toHaveLength(2)
    expect(warnings[1]).toMatch(/available again/)
    expect(warnings.join('\n')).not.toContain(KEY)
  })
})
