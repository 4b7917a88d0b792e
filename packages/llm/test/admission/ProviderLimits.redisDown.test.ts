import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'

type Mode = 'answer' | 'time out' | 'hold'

/**
 * An ioredis-shaped client whose counts are answered (`[count, pttl]`, the
 * limits far away), fail as a command that hit ioredis's `commandTimeout`
 * does, or wait until released. `runs` counts round trips, however they are
 * sent (a script by EVALSHA, or a command defined on the client).
 */
function fakeRedis() {
  const held: Array<() => void> = []
  const fake = {
    status: 'ready',
    mode: 'answer' as Mode,
    runs: 0,
    /** Commands defined on the client (ioredis `defineCommand`). */
    defined: [] as string[],
    release() {
      for (const go of held.splice(0)) go()
    },
    async evalsha(..._args: Array<string | number>): Promise<unknown> {
      return run()
    },
    async eval(..._args: Array<string | number>): Promise<unknown> {
      return run()
    },
    defineCommand(name: string) {
      fake.defined.push(name)
      Object.assign(fake, { [name]: run })
    },
  }
  async function run(): Promise<unknown> {
    fake.runs++
    if (fake.mode === 'time out') throw new Error('Command timed out')
    if (fake.mode === 'hold') await new Promise<void>((resolve) => held.push(resolve))
    return [1, 60_000]
  }
  return fake
}

function limitsOn(redis: ReturnType<typeof fakeRedis>, clock: ManualClock, warnings: string[]) {
  return new ProviderLimits({
    limits: { acme: { rpm: 100, tpm: 10_000 } },
    redis,
    instances: 2,
    redisBackoffMs: 1000,
    clock,
    logger: { warn: (message) => warnings.push(message) },
  })
}

async function admittedOf(limits: ProviderLimits, count: number): Promise<number> {
  let n = 0
  for (let i = 0; i < count; i++) if ((await limits.tryAcquire('acme', 10)).admitted) n++
  return n
}

describe('ProviderLimits after a Redis command fails', () => {
  it('defines no command on the caller’s client', () => {
    const redis = fakeRedis()
    limitsOn(redis, new ManualClock(), [])
    expect(redis.defined).toEqual([])
  })

  it('counts locally at once for redisBackoffMs, then one request tries Redis again; shared again once it answers', async () => {
    const redis = fakeRedis()
    const clock = new ManualClock()
    const warnings: string[] = []
    const limits = limitsOn(redis, clock, warnings)
    expect(await admittedOf(limits, 1)).toBe(1)
    expect(redis.runs).toBe(2)

    redis.mode = 'time out'
    // The RPM count times out; the TPM count of the same request is already local.
    expect(await admittedOf(limits, 1)).toBe(1)
    expect(redis.runs).toBe(3)
    expect(limits.degraded).toBe(true)
    expect(await admittedOf(limits, 10)).toBe(10)
    expect(redis.runs).toBe(3)
    clock.advance(999)
    expect(await admittedOf(limits, 1)).toBe(1)
    expect(redis.runs).toBe(3)

    // The back-off is over: one count tries Redis, fails, and the back-off starts over.
    clock.advance(1)
    expect(await admittedOf(limits, 5)).toBe(5)
    expect(redis.runs).toBe(4)

    redis.mode = 'answer'
    expect(await admittedOf(limits, 1)).toBe(1)
    expect(redis.runs).toBe(4)
    clock.advance(1000)
    expect(await admittedOf(limits, 3)).toBe(3)
    expect(redis.runs).toBe(4 + 3 * 2)
    expect(limits.degraded).toBe(false)
    expect(warnings).toEqual([
      expect.stringMatching(/Redis unavailable/),
      expect.stringMatching(/Redis is back/),
    ])
  })

  it('a client without `status` that answers again is back: not degraded, and said so once', async () => {
    const redis = fakeRedis()
    delete (redis as { status?: string }).status
    const clock = new ManualClock()
    const warnings: string[] = []
    const limits = limitsOn(redis, clock, warnings)
    redis.mode = 'time out'
    expect(await admittedOf(limits, 1)).toBe(1)
    expect(limits.degraded).toBe(true)
    redis.mode = 'answer'
    clock.advance(1000)
    const runs = redis.runs
    expect(await admittedOf(limits, 2)).toBe(2)
    expect(redis.runs, 'counted in Redis again').toBe(runs + 4)
    expect(limits.degraded, 'degraded after Redis answered again').toBe(false)
    expect(warnings).toEqual([
      expect.stringMatching(/Redis unavailable/),
      expect.stringMatching(/Redis is back/),
    ])
  })

  it('while the request trying Redis again waits for it, the others decide locally without waiting', async () => {
    const redis = fakeRedis()
    const clock = new ManualClock()
    const limits = limitsOn(redis, clock, [])
    redis.mode = 'time out'
    expect(await admittedOf(limits, 1)).toBe(1)
    clock.advance(1000)
    redis.mode = 'hold'
    const trying = limits.tryAcquire('acme', 10)
    expect(redis.runs).toBe(2)
    // Decided while the other's round trip is still out: nothing else is sent.
    expect(await admittedOf(limits, 4)).toBe(4)
    expect(redis.runs).toBe(2)
    redis.mode = 'answer'
    redis.release()
    expect((await trying).admitted).toBe(true)
    // Answered: its TPM count went to Redis too, and so does the next request.
    expect(redis.runs).toBe(3)
    expect(await admittedOf(limits, 1)).toBe(1)
    expect(redis.runs).toBe(5)
    expect(limits.degraded).toBe(false)
  })

  it('a client that reconnected since the failure ends the back-off: the next count goes to Redis at once', async () => {
    const redis = fakeRedis()
    const clock = new ManualClock()
    const warnings: string[] = []
    const limits = limitsOn(redis, clock, warnings)
    redis.mode = 'time out'
    expect(await admittedOf(limits, 1)).toBe(1)
    expect(redis.runs).toBe(1)
    // The connection is lost, then made again (ioredis: ready once Redis answered on it).
    redis.status = 'reconnecting'
    expect(await admittedOf(limits, 2)).toBe(2)
    redis.status = 'ready'
    redis.mode = 'answer'
    expect(await admittedOf(limits, 1)).toBe(1)
    expect(redis.runs).toBe(3)
    expect(limits.degraded).toBe(false)
    expect(warnings).toEqual([
      expect.stringMatching(/Redis unavailable/),
      expect.stringMatching(/Redis is back/),
    ])
  })

  it('with redisBackoffMs 0 every count asks Redis', async () => {
    const redis = fakeRedis()
    redis.mode = 'time out'
    const limits = new ProviderLimits({
      limits: { acme: { rpm: 100 } },
      redis,
      redisBackoffMs: 0,
      clock: new ManualClock(),
      logger: { warn: () => {} },
    })
    expect(await admittedOf(limits, 3)).toBe(3)
    expect(redis.runs).toBe(3)
  })

  it('refuses a back-off that is no number of ms, and a clock that is no Clock', () => {
    const limits = { acme: { rpm: 1 } }
    expect(() => new ProviderLimits({ limits, redisBackoffMs: Number.NaN })).toThrow(
      /redisBackoffMs/,
    )
    expect(() => new ProviderLimits({ limits, redisBackoffMs: -1 })).toThrow(/redisBackoffMs/)
    expect(
      () => new ProviderLimits({ limits, clock: { now: () => 0 } as unknown as ManualClock }),
    ).toThrow(/clock/)
  })
})

describe('a request refused for good says which limit it exceeds', () => {
  it("while Redis is unavailable: this process's share of the TPM limit, with both numbers", async () => {
    const limits = new ProviderLimits({
      limits: { acme: { tpm: 1000 } },
      redis: { status: 'reconnecting' },
      instances: 3,
      logger: { warn: () => {} },
    })
    const decision = await limits.tryAcquire('acme', 500, { deadline: Deadline.never() })
    expect(decision).toMatchObject({
      admitted: false,
      limit: 'tpm',
      retryAfterMs: Number.POSITIVE_INFINITY,
      reason:
        "the request alone (500 tokens) exceeds this process's share of the TPM limit while Redis is unavailable: 333 of 1000 tokens (1 of 3 instances)",
    })
  })

  it("admission's refusal says so: the share, not the limit", async () => {
    const limits = new ProviderLimits({
      limits: { acme: { tpm: 1000 } },
      redis: { status: 'reconnecting' },
      instances: 3,
      logger: { warn: () => {} },
    })
    const admission = new Admission({ limits, logger: { warn: () => {} } })
    const error = await admission
      .acquire({ provider: 'acme', tokens: 500, deadline: Deadline.never() })
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect(isRateLimited(error)).toBe(true)
    expect((error as Error).message).toContain(
      "exceeds this process's share of the TPM limit while Redis is unavailable: 333 of 1000 tokens",
    )
  })

  it('the whole TPM limit, with both numbers, on Redis or not', async () => {
    const redis = fakeRedis()
    for (const limits of [
      new ProviderLimits({ limits: { acme: { tpm: 1000 } } }),
      new ProviderLimits({ limits: { acme: { tpm: 1000 } }, redis, instances: 3 }),
    ]) {
      expect(await limits.tryAcquire('acme', 1001)).toMatchObject({
        admitted: false,
        retryAfterMs: Number.POSITIVE_INFINITY,
        reason: 'the request alone (1001 tokens) exceeds the TPM limit (1000 tokens)',
      })
    }
    expect(redis.runs).toBe(0)
  })

  it('a refusal a reset ends gives no reason: the wait says it', async () => {
    const limits = new ProviderLimits({ limits: { acme: { tpm: 1000 } } })
    expect((await limits.tryAcquire('acme', 900)).admitted).toBe(true)
    const decision = await limits.tryAcquire('acme', 200)
    expect(decision).toMatchObject({ admitted: false, limit: 'tpm' })
    expect(decision).not.toHaveProperty('reason')
  })
})
