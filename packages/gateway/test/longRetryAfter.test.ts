import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * llm trusts a provider's Retry-After for 60 s at most (its cooldown is
 * capped there, and one probe then asks whether the limit still holds). The
 * gateway tells its clients no more: a provider's `Retry-After: 86400`
 * passed on would keep SDKs and proxies away for a day from a gateway that
 * takes requests again within a minute.
 */
describe("a provider's day-long Retry-After", () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  it('reaches the client as at most 60 s, on the answer that met it and on the ones refused after it', async () => {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    fake.setReply(
      reply.error(
        429,
        { error: { message: 'come back tomorrow', type: 'requests', code: 'rate_limit_exceeded' } },
        { 'retry-after': '86400' },
      ),
    )
    harness = await startHarness({
      providers: { p: provider.entry },
      models: { m: fallback(['p', 'gpt']) },
    })
    const ask = () =>
      fetch(`${harness!.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '2000' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      })
    for (const res of [await ask(), await ask()]) {
      expect(res.status).toBe(429)
      const seconds = Number(res.headers.get('retry-after'))
      expect(seconds).toBeGreaterThanOrEqual(1)
      expect(seconds).toBeLessThanOrEqual(60)
      expect(Number(res.headers.get('retry-after-ms'))).toBeLessThanOrEqual(60_000)
      await res.body?.cancel()
    }
    // The second was refused by the cooldown, nothing sent.
    expect(fake.requests).toHaveLength(1)
  })
})
