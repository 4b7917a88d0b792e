import { ManualClock } from '@hourglass/core'
import { type FakeProvider, type RedisServer, redisAvailable, startRedis } from '@hourglass/testkit'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

const available = redisAvailable()
if (!available) {
  console.warn(
    '\n!!! redis-server is not on PATH: the frozen-Redis bound test is SKIPPED. Install redis-server (CI does). !!!\n',
  )
}

/** `redis.commandTimeoutMs` here: large enough that one bound and two are told apart on a loaded machine. */
const BOUND_MS = 500

/**
 * The README's promise (`redis.commandTimeoutMs`): a Redis command unanswered
 * for this long falls back to the local limiter. A request on a Redis that
 * has just frozen asks it two things in turn — its cooldowns, then its
 * limit count —, and the second must not wait a bound of its own once the
 * first has gone unanswered: the request waits one bound, not two.
 */
describe.skipIf(!available)('a request on a frozen Redis waits one command bound', () => {
  let redis: RedisServer
  let admin: Redis
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  beforeAll(async () => {
    redis = await startRedis()
    admin = new Redis(redis.url)
  })
  afterEach(async () => {
    redis.thaw()
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })
  afterAll(async () => {
    admin?.disconnect()
    await redis?.stop()
  })

  /** The scripts Redis has run (what was sent while it was frozen runs once it thaws). */
  const scriptsRun = async () => {
    const stats = await admin.info('commandstats')
    let calls = 0
    for (const m of stats.matchAll(/^cmdstat_eval(?:sha)?:calls=(\d+)/gm)) calls += Number(m[1])
    return calls
  }

  it('the limit count decides locally at once after the cooldown read timed out: one bound, one command', async () => {
    const provider = await fakeProvider('openai', ['k'], { limits: { rpm: 5 } })
    fake = provider.fake
    harness = await startHarness(
      {
        providers: { p: provider.entry },
        models: { m: fallback(['p', 'gpt']) },
        redis: { url: redis.url, keyPrefix: `bound-${Date.now()}`, commandTimeoutMs: BOUND_MS },
      },
      // The back-offs after a failure run on this clock: still, so none ends mid-test.
      { clock: new ManualClock() },
    )
    const ask = () =>
      harness!.client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
      })
    // Shared while Redis answers (the script bodies are loaded).
    await ask()
    const before = await scriptsRun()

    redis.freeze()
    const started = performance.now()
    await ask()
    const tookMs = performance.now() - started
    redis.thaw()
    await admin.ping()

    // It waited for the cooldown read's bound …
    expect(tookMs).toBeGreaterThanOrEqual(BOUND_MS - 20)
    // … and only that: two bounds in turn are 1000 ms.
    expect(tookMs).toBeLessThan(BOUND_MS * 1.6)
    // One command reached the frozen Redis (the cooldown read), not a limit count after it.
    expect((await scriptsRun()) - before).toBe(1)
    expect(fake.requests).toHaveLength(2)
  })
})
