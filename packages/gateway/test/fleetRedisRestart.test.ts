import {
  type FakeProvider,
  openAIErrors,
  type RedisServer,
  redisAvailable,
  startRedis,
} from '@hourglass/testkit'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { until } from '../../../test/support/until.js'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

const available = redisAvailable()
if (!available) {
  console.warn(
    '\n!!! redis-server is not on PATH: the fleet Redis-restart test is SKIPPED. Install redis-server (CI does). !!!\n',
  )
}

/**
 * Two gateways of a fleet on one Redis, which restarts empty (no
 * persistence, as a cache Redis often runs) in the middle of a 429 storm.
 * The instance that met the 429 still holds its 30 s cooldown; before, it
 * never wrote it again, so the other instance — and every instance started
 * since — sent into the storm to learn the limit anew, a 429 each, while
 * the provider had asked the whole fleet to wait.
 */
describe.skipIf(!available)('a fleet whose Redis restarts empty mid-storm', () => {
  let redis: RedisServer
  let fake: FakeProvider | undefined
  const harnesses: Harness[] = []
  const clients: Redis[] = []
  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(async () => {
    await redis?.stop()
  })
  afterEach(async () => {
    for (const c of clients.splice(0)) c.disconnect()
    await Promise.all(harnesses.splice(0).map((h) => h.close()))
    await fake?.close()
    fake = undefined
  })

  it('keeps the cooldown shared: the instance that holds it writes it again, the other sends nothing', async () => {
    const key = 'sk-fleet-restart-key-0001'
    const provider = await fakeProvider('openai', [key])
    fake = provider.fake
    const config = {
      providers: { p: provider.entry },
      models: { m: fallback(['p', 'model-p']) },
      policy: { maxAttempts: 1 },
      redis: { url: redis.url, keyPrefix: 'fleet-restart' },
    }
    const a = await startHarness(config, { drainTimeoutMs: 0 })
    harnesses.push(a)
    const b = await startHarness(config, { drainTimeoutMs: 0 })
    harnesses.push(b)
    const ask = (h: Harness) =>
      fetch(`${h.url}/v1/chat/completions`, {
        method: 'POST',
        // A budget the 30 s cooldown does not fit: refused at once, not waited out.
        headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '5000' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
      })
    const shared = async (h: Harness) =>
      ((await fetch(`${h.url}/readyz`).then((r) => r.json())) as { redis: string }).redis ===
      'shared'

    // A meets the storm: its key cools for 30 s, in Redis too.
    fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 30 }))
    expect((await ask(a)).status).toBe(429)
    expect(fake.requests).toHaveLength(1)

    // Redis restarts empty; both gateways reconnect on their own schedule.
    await redis.kill()
    await redis.restart()
    await until(
      async () => (await shared(a)) && (await shared(b)),
      10_000,
      'both gateways to reconnect',
    )
    const look = new Redis(redis.url, { maxRetriesPerRequest: 0 })
    look.on('error', () => {})
    clients.push(look)
    expect(await look.dbsize(), 'the restarted Redis is empty').toBe(0)

    // A's next request in the storm is refused by what A holds, and writes it back…
    expect((await ask(a)).status).toBe(429)
    await until(async () => (await look.dbsize()) > 0, 10_000, "A's cooldown written again")
    // …so B, which never met the 429, refuses with nothing sent.
    expect((await ask(b)).status).toBe(429)
    expect(fake.requests, 'B sent into the storm').toHaveLength(1)
  })
})
