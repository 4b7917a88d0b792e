import { ManualClock } from '@hourglass/core'
import { type FakeProvider, type RedisServer, redisAvailable, startRedis } from '@hourglass/testkit'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

const available = redisAvailable()
if (!available) {
  console.warn(
    '\n!!! redis-server is not on PATH: the frozen-Redis count test is SKIPPED. Install redis-server (CI does). !!!\n',
  )
}

/**
 * A request served on the local limiter because Redis froze: its limit
 * count is not sent to the Redis whose cooldown read just went unanswered
 * (it would have waited a second bound there), so it is counted locally
 * alone — as the counts made locally while Redis is down are, never
 * replayed into Redis — and nothing lands in the shared window once Redis
 * thaws. Once Redis answers again (and the back-offs are over, on the
 * gateway's clock), the limits are shared again.
 */
describe.skipIf(!available)('a request served locally while Redis is frozen', () => {
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

  it('is counted in the local window, its count never sent to the frozen Redis; shared again once Redis answers', async () => {
    const prefix = `once-${Date.now()}`
    const provider = await fakeProvider('openai', ['k'], { limits: { rpm: 3 } })
    fake = provider.fake
    const clock = new ManualClock()
    harness = await startHarness(
      {
        providers: { p: provider.entry, w: { ...provider.entry, limits: { rpm: 100 } } },
        models: { m: fallback(['p', 'gpt']), warm: fallback(['w', 'gpt']) },
        redis: { url: redis.url, keyPrefix: prefix, commandTimeoutMs: 100 },
        // Shorter than the window: a spent one is refused at once, not waited for.
        deadline: { defaultMs: 5000 },
      },
      { clock },
    )
    const ask = async (model = 'm') => {
      try {
        await harness!.client.chat.completions.create({
          model,
          messages: [{ role: 'user', content: 'x' }],
        })
        return 200
      } catch (error) {
        return (error as { status?: number }).status
      }
    }
    /** What the shared window holds for p (the key the limits count in). */
    const shared = () => admin.get(`${prefix}:limits:rpm:p`)
    // The scripts loaded into Redis by another provider's request: p's window is untouched.
    expect(await ask('warm')).toBe(200)
    expect(await shared()).toBe(null)

    redis.freeze()
    expect(await ask()).toBe(200)
    redis.thaw()
    // Whatever was sent while frozen has run once this is answered.
    await admin.ping()
    expect(await shared()).toBe(null)
    expect(harness.running.gateway.redisState()).toBe('local-fallback')

    // The local window holds that request: two more of the 3, then refused (nothing sent).
    expect(await ask()).toBe(200)
    expect(await ask()).toBe(200)
    expect(await ask()).toBe(429)
    expect(await shared()).toBe(null)

    // Past the back-offs: a cooldown read answered, and the counts go to Redis again.
    clock.advance(1000)
    expect(await ask()).toBe(200)
    expect(await shared()).toBe('1')
    expect(harness.running.gateway.redisState()).toBe('shared')
    // warm, the one served while frozen, two local, one shared.
    expect(fake.requests).toHaveLength(5)
  })
})
