import { ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ProviderLimits, type RedisLimitClient } from '../../src/admission/ProviderLimits.js'

const quiet = { warn: () => {}, info: () => {} }

/**
 * A Redis client that counts as `LIMIT_SCRIPT` does, one window of
 * `pttl()` ms left, and records the points of every script run (a
 * negative one: a give-back). `failNext` fails the next run (a lost
 * connection); `holdNext` holds the next run's answer until `release`.
 */
function scriptedRedis(pttl: () => number) {
  let count = 0
  let failNext = false
  let holding = false
  const held: Array<() => void> = []
  const runs: number[] = []
  const run = async (...args: Array<string | number>): Promise<unknown> => {
    const points = Number(args[2]) // numKeys, key, points, …
    runs.push(points)
    if (failNext) {
      failNext = false
      throw new Error('connection lost')
    }
    if (holding) {
      holding = false
      await new Promise<void>((resolve) => held.push(resolve))
    }
    count = points < 0 ? Math.max(0, count + points) : count + points
    return [count, pttl()]
  }
  const client: RedisLimitClient & { status: string } = {
    status: 'ready',
    evalsha: (_sha, ...args) => run(...args),
    eval: (_script, ...args) => run(...args),
  }
  return {
    client,
    runs,
    count: () => count,
    failNext: () => {
      failNext = true
    },
    holdNext: () => {
      holding = true
    },
    release: () => {
      for (const go of held.splice(0)) go()
    },
  }
}

/** Requests admitted of `n` tried in turn. */
async function admittedOf(limits: ProviderLimits, n: number): Promise<number> {
  let admitted = 0
  for (let i = 0; i < n; i++) if ((await limits.tryAcquire('acme', 0)).admitted) admitted++
  return admitted
}

/** `acme` at 2 requests a minute on a scripted Redis (windows of `pttl()` ms), with a 1 s back-off after a failed count. */
function rpmTwoOnRedis(pttl: () => number = () => 60_000) {
  const redis = scriptedRedis(pttl)
  const clock = new ManualClock()
  const limits = new ProviderLimits({
    limits: { acme: { rpm: 2 } },
    redis: redis.client,
    redisBackoffMs: 1000,
    clock,
    logger: quiet,
  })
  return { redis, clock, limits }
}

async function counted(limits: ProviderLimits) {
  const decision = await limits.count('acme', 0)
  if (!decision.admitted || decision.giveBack === undefined) throw new Error('not admitted')
  return decision.giveBack
}

afterEach(() => {
  vi.useRealTimers()
})

describe('a give-back goes to the limiter that counted the request: Redis or the local share', () => {
  it('a request counted on the local share, given back once Redis answers again, gives Redis nothing', async () => {
    const { redis, clock, limits } = rpmTwoOnRedis()
    await counted(limits) // on Redis: 1 of 2
    redis.failNext()
    const local = await counted(limits) // Redis fails: on the local share
    expect(limits.degraded).toBe(true)
    expect(redis.count()).toBe(1)
    clock.advance(1000) // the back-off is over: Redis is asked again
    await local() // not sent after all
    // Given to Redis (its script checks the window's PTTL only), the window
    // that never counted it went to 0: 3 requests of an RPM limit of 2.
    expect(redis.runs.filter((points) => points < 0)).toEqual([])
    expect(redis.count()).toBe(1)
    expect(await admittedOf(limits, 3)).toBe(1)
    // It went back to the local share: Redis gone again, the share has both.
    redis.client.status = 'end'
    expect(await admittedOf(limits, 3)).toBe(2)
  })

  it('a request Redis counted while another was counted locally is given back to Redis', async () => {
    const { redis, clock, limits } = rpmTwoOnRedis()
    // Its round trip is slow; meanwhile another count fails over to the local share.
    redis.holdNext()
    const slow = counted(limits)
    redis.failNext()
    await counted(limits)
    redis.release()
    const onRedis = await slow
    expect(redis.count()).toBe(1)
    clock.advance(1000)
    await onRedis()
    expect(redis.runs.filter((points) => points < 0)).toEqual([-1])
    expect(redis.count()).toBe(0)
  })

  it('a request Redis counted, given back during the back-off after a failed count, goes back to Redis once it is asked again', async () => {
    const { redis, clock, limits } = rpmTwoOnRedis()
    const onRedis = await counted(limits) // on Redis: 1 of 2
    redis.failNext()
    await counted(limits) // Redis fails: on the local share, and the back-off starts
    await onRedis() // not sent after all, while Redis is not asked
    expect(redis.count()).toBe(1)
    clock.advance(1000) // the back-off is over: the next count asks Redis
    // Dropped (handed to the local share, which never counted it), the
    // request held the fleet's window till it ended: 1 admitted of 2.
    expect(await admittedOf(limits, 3)).toBe(2)
    expect(redis.runs.filter((points) => points < 0)).toEqual([-1])
  })

  it("Redis gone: a request Redis counted gives nothing to a local window ending when Redis's did", async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    // The local share's window, once started, ends when Redis's window does.
    let localEnd = 0
    const { redis, limits } = rpmTwoOnRedis(() => localEnd - Date.now())
    redis.client.status = 'end'
    await counted(limits) // on the local share (2): 1 of 2
    localEnd = Date.now() + 60_000
    redis.client.status = 'ready'
    const onRedis = await counted(limits)
    redis.client.status = 'end'
    // The library hands a give-back Redis fails on to the local share,
    // whose window ended within the slack of the one that counted it.
    await onRedis()
    expect(await admittedOf(limits, 3)).toBe(1)
  })
})

// The window a count went to is named by its end as the count read it. Read
// once the count's continuation ran, a loop held 80 ms in between (a busy
// step, a GC pause, 3,000 callers counting at once) moved it past the memory
// windows' 50 ms slack; read before the count, a count the local share took
// after a Redis command timed out (a second later) named a window too early.
// Either way the give-back named another window and gave nothing back.
describe('a count is given back to its window however late its continuation ran', () => {
  it('in memory: the loop held 80 ms before the count’s continuation', async () => {
    const limits = new ProviderLimits({ limits: { acme: { rpm: 1 } }, logger: quiet })
    const counting = limits.count('acme', 0)
    queueMicrotask(() => {
      const until = Date.now() + 80
      while (Date.now() < until) {
        // The loop held, as by a CPU-bound step.
      }
    })
    const decision = await counting
    if (!decision.admitted || decision.giveBack === undefined) throw new Error('not admitted')
    await decision.giveBack()
    expect(await limits.tryAcquire('acme', 0)).toEqual({ admitted: true })
  })

  it('on the local share, after a Redis command timed out, the loop held 80 ms before the count’s continuation', async () => {
    // Connected, answering nothing: the count times out and the local share takes it.
    const frozen: RedisLimitClient & { status: string } = {
      status: 'ready',
      evalsha: () => new Promise(() => {}),
      eval: () => new Promise(() => {}),
    }
    const limits = new ProviderLimits({
      limits: { acme: { rpm: 1 } },
      redis: frozen,
      redisCommandTimeoutMs: 100,
      redisBackoffMs: 60_000,
      // Warned as the local share takes the count over, just before it
      // counts: the loop is held between that count and its continuation.
      logger: {
        info: () => {},
        warn: () =>
          queueMicrotask(() => {
            const until = Date.now() + 80
            while (Date.now() < until) {
              // The loop held, as by a CPU-bound step.
            }
          }),
      },
    })
    const decision = await limits.count('acme', 0)
    if (!decision.admitted || decision.giveBack === undefined) throw new Error('not admitted')
    expect(limits.degraded).toBe(true)
    await decision.giveBack()
    // The back-off holds: the local share (1 of 1) decides.
    expect(await limits.tryAcquire('acme', 0)).toEqual({ admitted: true })
  })
})
