import { Deadline, ManualClock } from '@hourglass/core'
import { type RedisServer, redisAvailable, startRedis } from '@hourglass/testkit'
import { Redis } from 'ioredis'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import type { CooldownExtension, CooldownStore } from '../../src/admission/CooldownStore.js'
import {
  RedisCooldownStore,
  type RedisScriptClient,
} from '../../src/admission/RedisCooldownStore.js'

/**
 * A store the test answers by hand: `remaining` fails at once (a command
 * timeout that has run out), is held until `answer()` (Redis slow), or
 * answers "not cooling". Every round trip is counted.
 */
class HandStore implements CooldownStore {
  mode: 'fail' | 'hold' | 'answer' = 'answer'
  /** The connection's state, as `RedisCooldownStore` passes on ioredis's; undefined = none. */
  status: string | undefined = undefined
  reads = 0
  writes: number[] = []
  #held: Array<() => void> = []

  remaining(_provider: string, keyIds: readonly string[]): Promise<number[]> {
    this.reads++
    const zeros = keyIds.map(() => 0)
    if (this.mode === 'fail') return Promise.reject(new Error('Command timed out'))
    if (this.mode === 'hold') {
      return new Promise((resolve) => this.#held.push(() => resolve(zeros)))
    }
    return Promise.resolve(zeros)
  }

  extend(_provider: string, _keyId: string, waitMs: number): Promise<CooldownExtension> {
    this.writes.push(waitMs)
    if (this.mode === 'fail') return Promise.reject(new Error('Command timed out'))
    return Promise.resolve({ remainingMs: waitMs, extended: true })
  }

  answer(): void {
    for (const go of this.#held.splice(0)) go()
  }
}

describe('a cooldown store that failed is not asked again by every call', () => {
  // A frozen Redis (SIGSTOP, a long fork) keeps its connection open: every
  // acquire waited the client's commandTimeout for a refresh bound to fail,
  // 250 ms added to every call of the process for as long as it lasted.
  it('for storeBackoffMs the calls decide on what the process knows; then one asks again, the others still local until it is answered', async () => {
    const clock = new ManualClock()
    const store = new HandStore()
    const warnings: string[] = []
    const admission = new Admission({
      store,
      clock,
      storeBackoffMs: 1000,
      logger: { warn: (m) => warnings.push(m) },
    })
    using deadline = Deadline.after(60_000, { clock })
    const acquire = () =>
      admission.acquire({ provider: 'p', keys: ['k1'], model: 'm', deadline, neededMs: 0 })

    store.mode = 'fail'
    ;(await acquire()).release()
    expect(store.reads).toBe(1)
    expect(warnings).toEqual([expect.stringMatching(/cooldown store unavailable/)])

    for (let i = 0; i < 5; i++) (await acquire()).release()
    expect(store.reads, 'calls during the back-off asked the store').toBe(1)

    // A limit learned meanwhile (another model's) is still written for the fleet.
    await admission.report(
      'p',
      'k1',
      { ok: false, error: { kind: 'rate_limited', status: 429, retryAfterMs: 10 } },
      { model: 'other-model' },
    )
    expect(store.writes).toEqual([10])
    // Not waited for during the back-off: its failure lands now.
    await new Promise((resolve) => setImmediate(resolve))
    clock.advance(1000)

    store.mode = 'hold'
    const asking = acquire()
    await Promise.resolve()
    expect(store.reads).toBe(2)
    // While that one waits for the store, the others do not.
    ;(await acquire()).release()
    expect(store.reads).toBe(2)
    store.answer()
    ;(await asking).release()
    expect(warnings).toHaveLength(2)
    expect(warnings[1]).toMatch(/available again/)

    store.mode = 'answer'
    ;(await acquire()).release()
    ;(await acquire()).release()
    expect(store.reads, 'once back, every call reads the shared cooldowns').toBe(4)
  })

  it('a failure during the retry starts the back-off over', async () => {
    const clock = new ManualClock()
    const store = new HandStore()
    const admission = new Admission({ store, clock, storeBackoffMs: 500, logger: { warn() {} } })
    using deadline = Deadline.after(60_000, { clock })
    const acquire = async () =>
      (await admission.acquire({ provider: 'p', deadline, neededMs: 0 })).release()
    store.mode = 'fail'
    await acquire()
    clock.advance(500)
    await acquire()
    expect(store.reads).toBe(2)
    clock.advance(499)
    await acquire()
    expect(store.reads).toBe(2)
    clock.advance(1)
    store.mode = 'answer'
    await acquire()
    await acquire()
    expect(store.reads).toBe(4)
  })

  it('a store seen reconnecting during the back-off is asked again as soon as it is ready: a restarted Redis is shared at once', async () => {
    const clock = new ManualClock()
    const store = new HandStore()
    const admission = new Admission({ store, clock, storeBackoffMs: 60_000, logger: { warn() {} } })
    using deadline = Deadline.after(60_000, { clock })
    const acquire = async () =>
      (await admission.acquire({ provider: 'p', deadline, neededMs: 0 })).release()
    store.status = 'ready'
    store.mode = 'fail'
    await acquire()
    store.status = 'reconnecting'
    await acquire()
    expect(store.reads).toBe(1)
    store.status = 'ready'
    store.mode = 'answer'
    await acquire()
    await acquire()
    expect(store.reads).toBe(3)
  })

  it('by default a store backs off for 1 s, a RedisCooldownStore and a store of your own (a wrapper) alike; a wrapper watching every command sets 0', async () => {
    const clock = new ManualClock()
    let sent = 0
    const timingOut: RedisScriptClient = {
      evalsha: () => {
        sent++
        return Promise.reject(new Error('Command timed out'))
      },
      eval: () => Promise.reject(new Error('Command timed out')),
    }
    const redisStore = new RedisCooldownStore(timingOut)
    const wrapped: CooldownStore = {
      remaining: (provider, ids) => redisStore.remaining(provider, ids),
      extend: (provider, id, waitMs, reason) => redisStore.extend(provider, id, waitMs, reason),
    }
    using deadline = Deadline.after(60_000, { clock })
    const acquireOn = async (admission: Admission) =>
      (await admission.acquire({ provider: 'p', deadline, neededMs: 0 })).release()

    const onRedis = new Admission({ store: redisStore, clock, logger: { warn() {} } })
    for (let i = 0; i < 3; i++) await acquireOn(onRedis)
    expect(sent).toBe(1)
    clock.advance(999)
    await acquireOn(onRedis)
    expect(sent).toBe(1)
    clock.advance(1)
    await acquireOn(onRedis)
    expect(sent).toBe(2)

    // A store of the user's that fails once is not asked again by every call
    // (it was, with a default of 0 for any store but Redis).
    const onWrapper = new Admission({ store: wrapped, clock, logger: { warn() {} } })
    for (let i = 0; i < 3; i++) await acquireOn(onWrapper)
    expect(sent).toBe(3)
    clock.advance(1000)
    await acquireOn(onWrapper)
    expect(sent).toBe(4)

    const everyCommand = new Admission({
      store: wrapped,
      clock,
      storeBackoffMs: 0,
      logger: { warn() {} },
    })
    for (let i = 0; i < 3; i++) await acquireOn(everyCommand)
    expect(sent).toBe(7)
  })

  it('storeBackoffMs 0 asks the store on every call; NaN is a RangeError naming it', async () => {
    const clock = new ManualClock()
    const store = new HandStore()
    const admission = new Admission({ store, clock, storeBackoffMs: 0, logger: { warn() {} } })
    using deadline = Deadline.after(60_000, { clock })
    store.mode = 'fail'
    for (let i = 0; i < 3; i++) {
      ;(await admission.acquire({ provider: 'p', deadline, neededMs: 0 })).release()
    }
    expect(store.reads).toBe(3)
    expect(() => new Admission({ storeBackoffMs: Number.NaN })).toThrow(/storeBackoffMs.*NaN/)
  })
})

const available = redisAvailable()

describe.skipIf(!available)('a frozen Redis behind RedisCooldownStore', () => {
  let redis: RedisServer | undefined
  const clients: Redis[] = []
  afterEach(() => {
    redis?.thaw()
    for (const c of clients.splice(0)) c.disconnect()
  })
  afterAll(async () => {
    await redis?.stop()
  })

  it('costs one command timeout: the calls after it are granted without a round trip', async () => {
    redis = await startRedis()
    const c = new Redis(redis.url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0,
    })
    c.on('error', () => {})
    clients.push(c)
    await c.connect()
    let sent = 0
    const counted: RedisScriptClient = {
      evalsha: (...args) => {
        sent++
        return c.evalsha(...args)
      },
      eval: (...args) => {
        sent++
        return c.eval(...args)
      },
    }
    const admission = new Admission({
      store: new RedisCooldownStore(counted, { keyPrefix: `frozen:${Math.random()}:` }),
      // Long enough that a loaded machine does not end it between these calls.
      storeBackoffMs: 60_000,
      logger: { warn() {} },
    })
    const acquire = async () => {
      using deadline = Deadline.after(10_000)
      ;(await admission.acquire({ provider: 'p', keys: ['k1'], deadline, neededMs: 0 })).release()
    }
    await acquire()
    // The bound only once Redis is frozen (ioredis reads it per command): on
    // a loaded machine 100 ms ended the connect's ready check ("Connection
    // is closed") or the first call, which this test needs answered.
    c.options.commandTimeout = 100
    const before = sent
    redis.freeze()
    for (let i = 0; i < 5; i++) await acquire()
    expect(sent - before, 'round trips to the frozen Redis').toBe(1)
  })
})
