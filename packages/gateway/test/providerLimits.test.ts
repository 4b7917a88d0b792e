import {
  type FakeProvider,
  type RedisServer,
  redisAvailable,
  reply,
  startRedis,
} from '@hourglass/testkit'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

const within = { headers: { 'x-deadline-remaining-ms': '5000' } }

describe('per-provider RPM limits in the gateway', () => {
  let fakes: FakeProvider[] = []
  let harnesses: Harness[] = []
  afterEach(async () => {
    await Promise.all(harnesses.map((h) => h.close()))
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harnesses = []
  })

  it('a provider at its RPM limit is skipped for the next one instead of queueing; the limit holds upstream', async () => {
    const a = await fakeProvider('openai', ['ka'], { limits: { rpm: 2 } })
    const b = await fakeProvider('deepseek', ['kb'])
    fakes.push(a.fake, b.fake)
    a.fake.setReply(reply.text('from a'))
    b.fake.setReply(reply.text('from b'))
    const h = await startHarness({
      providers: { a: a.entry, b: b.entry },
      models: { m: fallback(['a', 'gpt'], ['b', 'deepseek-chat']) },
    })
    harnesses.push(h)
    const answers: string[] = []
    for (let i = 0; i < 5; i++) {
      const c = await h.client.chat.completions.create(
        { model: 'm', messages: [{ role: 'user', content: `${i}` }] },
        within,
      )
      answers.push(c.choices[0]?.message.content ?? '')
    }
    expect(answers).toEqual(['from a', 'from a', 'from b', 'from b', 'from b'])
    expect(a.fake.requests).toHaveLength(2)
    // B's limits are its own: A's spent limit did not spill onto it.
    expect(b.fake.requests).toHaveLength(3)
  })

  it("a request larger than a provider's whole TPM limit goes to the next provider; with none left it is a 413 request_too_large that says no wait helps", async () => {
    const a = await fakeProvider('openai', ['ka'], { limits: { tpm: 500 } })
    const b = await fakeProvider('deepseek', ['kb'])
    fakes.push(a.fake, b.fake)
    a.fake.setReply(reply.text('from a'))
    b.fake.setReply(reply.text('from b'))
    const h = await startHarness({
      providers: { a: a.entry, b: b.entry },
      models: { m: fallback(['a', 'gpt'], ['b', 'deepseek-chat']), only: fallback(['a', 'gpt']) },
    })
    harnesses.push(h)
    const big = { messages: [{ role: 'user' as const, content: 'x' }], max_tokens: 1000 }
    const c = await h.client.chat.completions.create({ model: 'm', ...big }, within)
    expect(c.choices[0]?.message.content).toBe('from b')
    // A small one still fits A's window.
    const small = await h.client.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 100 },
      within,
    )
    expect(small.choices[0]?.message.content).toBe('from a')
    const res = await fetch(`${h.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...within.headers },
      body: JSON.stringify({ model: 'only', ...big }),
    })
    // No window ever lets it through: the provider's own word for it, not a rate limit to come back to.
    expect(res.status).toBe(413)
    expect(res.headers.get('retry-after')).toBeNull()
    expect(res.headers.get('x-should-retry')).toBe('false')
    const { error } = (await res.json()) as { error: { message: string; code: string } }
    expect(error.code).toBe('request_too_large')
    expect(error.message).toMatch(
      /\(a: the request alone \(\d+ tokens\) exceeds the TPM limit \(\d+ tokens\)\)$/,
    )
    expect(a.fake.requests).toHaveLength(1)
    expect(b.fake.requests).toHaveLength(1)
  })

  it('with no provider left, a spent limit is a 429 with Retry-After for the window, sent nowhere', async () => {
    const a = await fakeProvider('openai', ['ka'], { limits: { rpm: 1 } })
    fakes.push(a.fake)
    const h = await startHarness({
      providers: { a: a.entry },
      models: { m: fallback(['a', 'gpt']) },
      limits: { windowMs: 30_000 },
    })
    harnesses.push(h)
    await h.client.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: 'x' }] },
      within,
    )
    const res = await fetch(`${h.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...within.headers },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'y' }] }),
    })
    expect(res.status).toBe(429)
    const retryAfterS = Number(res.headers.get('retry-after'))
    // The window's end, spread up to 2 s later (test/longRetryAfter.test.ts).
    expect(retryAfterS).toBeGreaterThan(20)
    expect(retryAfterS).toBeLessThanOrEqual(32)
    expect(await res.json()).toMatchObject({ error: { code: 'rate_limit_exceeded' } })
    expect(a.fake.requests).toHaveLength(1)
  })

  it('the longest window the config takes (2147483000 ms) still holds: at rpm 1 the second request is a 429, sent nowhere', async () => {
    const a = await fakeProvider('openai', ['ka'], { limits: { rpm: 1 } })
    fakes.push(a.fake)
    a.fake.setReply(reply.text('ok'))
    const h = await startHarness({
      providers: { a: a.entry },
      models: { m: fallback(['a', 'gpt']) },
      limits: { windowMs: 2_147_483_000 },
    })
    harnesses.push(h)
    const statuses: number[] = []
    for (const content of ['x', 'y']) {
      const res = await fetch(`${h.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...within.headers },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content }] }),
      })
      await res.arrayBuffer()
      statuses.push(res.status)
    }
    expect(statuses).toEqual([200, 429])
    expect(a.fake.requests).toHaveLength(1)
  })
})

const available = redisAvailable()
if (!available) {
  console.warn(
    '\n!!! redis-server is not on PATH: the gateway shared-limit test is SKIPPED. Install redis-server (CI does) to run it. !!!\n',
  )
}

describe.skipIf(!available)('two gateways sharing one real Redis', () => {
  let redis: RedisServer
  let fake: FakeProvider | undefined
  let harnesses: Harness[] = []
  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(async () => {
    await redis?.stop()
  })
  afterEach(async () => {
    await Promise.all(harnesses.map((h) => h.close()))
    await fake?.close()
    harnesses = []
  })

  it('enforce one RPM limit between them: the provider never sees more than the limit', async () => {
    const provider = await fakeProvider('qwen', ['kq'], { limits: { rpm: 4 } })
    fake = provider.fake
    fake.setReply(reply.text('ok'))
    const config = {
      providers: { q: provider.entry },
      models: { m: fallback(['q', 'qwen-plus']) },
      redis: { url: redis.url, keyPrefix: `gw-test-${Date.now()}` },
      // instances: 1, so two unshared counters would admit 4 each — only a shared count admits 4 in all.
    }
    harnesses = [await startHarness(config), await startHarness(config)]
    for (const h of harnesses) {
      expect(await (await fetch(`${h.url}/readyz`)).json()).toEqual({
        status: 'ready',
        redis: 'shared',
      })
    }
    const statuses = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        harnesses[i % 2]!.client.chat.completions.create(
          { model: 'm', messages: [{ role: 'user', content: `${i}` }] },
          within,
        ).then(
          () => 200,
          (e: { status?: number }) => e.status,
        ),
      ),
    )
    expect(fake.requests).toHaveLength(4)
    expect(statuses.filter((s) => s === 200)).toHaveLength(4)
    expect(statuses.filter((s) => s === 429)).toHaveLength(8)
    // Served by the two instances together, and neither fell back to counting alone.
    const served = harnesses.map(
      (h) => h.logs.filter((l) => l.event === 'request' && l['status'] === 200).length,
    )
    expect(served[0]! + served[1]!).toBe(4)
    for (const h of harnesses) expect(h.logs.filter((l) => l.event === 'limits')).toEqual([])
  })

  it('keep serving when Redis dies, on local limits and cooldowns, and say so once', async () => {
    const provider = await fakeProvider('openai', ['ko'], { limits: { rpm: 100 } })
    fake = provider.fake
    fake.setReply(reply.text('still here'))
    const h = await startHarness({
      providers: { o: provider.entry },
      models: { m: fallback(['o', 'gpt']) },
      redis: { url: redis.url, keyPrefix: `gw-down-${Date.now()}` },
    })
    harnesses = [h]
    const ask = () =>
      h.client.chat.completions.create(
        { model: 'm', messages: [{ role: 'user', content: 'x' }] },
        within,
      )
    expect((await ask()).choices[0]?.message.content).toBe('still here')
    expect(h.logs.filter((l) => l.level === 'warn')).toEqual([])
    await redis.kill()
    try {
      for (let i = 0; i < 5; i++)
        expect((await ask()).choices[0]?.message.content).toBe('still here')
      // Still ready (each instance serves on its local share), and says where limits are counted.
      const ready = await fetch(`${h.url}/readyz`)
      expect(ready.status).toBe(200)
      expect(await ready.json()).toEqual({ status: 'ready', redis: 'unreachable' })
      expect((await fetch(`${h.url}/healthz`)).status).toBe(200)
      // One warning from each part that shares state through Redis, not one per request.
      const warnings = h.logs.filter((l) => l.event === 'limits' || l.event === 'admission')
      expect(warnings.map((w) => w.event).sort()).toEqual(['admission', 'limits'])
      expect(fake.requests).toHaveLength(6)
    } finally {
      await redis.restart()
    }
  })
})
