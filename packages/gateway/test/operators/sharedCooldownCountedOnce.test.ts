import { keyId } from '@hourglass/llm'
import {
  type FakeProvider,
  openAIErrors,
  type RedisServer,
  redisAvailable,
  startRedis,
} from '@hourglass/testkit'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from '../support/harness.js'

const available = redisAvailable()
if (!available) {
  console.warn(
    '\n!!! redis-server is not on PATH: the shared-cooldown metrics test is SKIPPED. Install redis-server (CI does). !!!\n',
  )
}

/** The summed value of `name`'s samples whose labels include `labels`, on a Prometheus text page. */
function value(page: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0
  for (const line of page.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match?.[1] !== name) continue
    const got = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    )
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) sum += Number(match[3])
  }
  return sum
}

/**
 * Two gateways sharing one Redis: a rate limit one of them met is one
 * cooldown in the fleet's `/metrics`, counted where it started. The other
 * learns it from Redis (and waits, or refuses, by it: its waits and
 * fallbacks count that); counted there too, `sum(hourglass_gateway_cooldowns_total)`
 * said one 429 was as many cooldowns as there are instances.
 */
describe.skipIf(!available)('a cooldown shared through Redis', () => {
  let redis: RedisServer
  let fake: FakeProvider | undefined
  const harnesses: Harness[] = []
  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(async () => {
    await redis?.stop()
  })
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.close()))
    await fake?.close()
    fake = undefined
  })

  it('is counted by the gateway whose attempt met the rate limit, not again by one that learned it from Redis', async () => {
    const key = 'sk-shared-cooldown-key-0001'
    const provider = await fakeProvider('openai', [key])
    fake = provider.fake
    const config = {
      providers: { p: provider.entry },
      models: { m: fallback(['p', 'model-p']) },
      policy: { maxAttempts: 1 },
      redis: { url: redis.url, keyPrefix: 'shared-cooldown-once' },
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

    // A meets the 429: its key cools down for 30 s, in Redis too.
    fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 30 }))
    expect((await ask(a)).status).toBe(429)
    // B learns the cooldown from Redis: refused with nothing sent.
    const refused = await ask(b)
    expect(refused.status).toBe(429)
    expect(fake.requests).toHaveLength(1)

    const pageA = await fetch(`${a.url}/metrics`).then((r) => r.text())
    const pageB = await fetch(`${b.url}/metrics`).then((r) => r.text())
    const labels = { provider: 'p', key_id: keyId(key) }
    expect(value(pageA, 'hourglass_gateway_cooldowns_total', labels)).toBe(1)
    expect(value(pageB, 'hourglass_gateway_cooldowns_total')).toBe(0)
    // B did refuse by it: its own error says so.
    expect(value(pageB, 'hourglass_gateway_errors_total', { kind: 'rate_limit_exceeded' })).toBe(1)
  })
})
