import { ManualClock } from '@hourglass/core'
import { Admission } from '@hourglass/llm'
import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { errorReply } from '../src/http/errorReply.js'
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

  // A 429 or overload without Retry-After (Qwen's, Ernie's, Doubao's,
  // Anthropic's 529): the gateway sets a cooldown all the same, and refuses
  // (or holds) requests for it, but the answer that met the provider's
  // refusal said nothing of it: the SDK retried on its own short back-off
  // into that cooldown, spending its retries there.
  it.each([
    [
      'a 429',
      'openai',
      429,
      { error: { message: 'slow', type: 'requests', code: 'rate_limit_exceeded' } },
    ],
    [
      'an overload',
      'anthropic',
      529,
      { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
    ],
  ] as const)(
    'without one, the answer that met %s says when the gateway takes the request again',
    async (_, dialect, status, body) => {
      const provider = await fakeProvider(dialect, ['k'])
      fake = provider.fake
      fake.setReply(reply.error(status, body))
      harness = await startHarness({
        providers: { p: provider.entry },
        models: { m: fallback(['p', 'model']) },
        // One attempt: the answer is the provider's refusal itself.
        policy: { maxAttempts: 1, max529Retries: 0 },
      })
      const res = await fetch(`${harness.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      })
      await res.body?.cancel()
      expect(res.status).toBe(status === 529 ? 503 : 429)
      expect(fake.requests).toHaveLength(1)
      expect(Number(res.headers.get('retry-after-ms')), 'retry-after-ms').toBeGreaterThan(0)
      expect(Number(res.headers.get('retry-after')), 'retry-after').toBeGreaterThanOrEqual(1)
    },
  )

  // Every client refused during one cooldown is refused until its end, and
  // openai-node sleeps retry-after-ms exactly: told one instant, a burst
  // comes back in one burst. Told a spread after the end, never before it.
  it.each([
    ['a rate limit', 'rate_limited', 429, 20_000, 2_000],
    ['an overload', 'overloaded', 529, 5_000, 500],
    ['a cooldown held at the 60 s cap', 'rate_limited', 429, 86_400_000, 0],
  ] as const)(
    'clients refused by %s at one moment are told to come back spread over the time after it, never before',
    async (_, kind, status, retryAfterMs, spreadMs) => {
      const clock = new ManualClock()
      const admission = new Admission({ clock })
      await admission.report('p', 'k', { ok: false, error: { kind, status, retryAfterMs } })
      const refused = await admission.acquire({ provider: 'p', keys: ['k'], maxWaitMs: 0 }).then(
        () => expect.unreachable('admitted'),
        (e: unknown) => e,
      )
      const waits = Array.from({ length: 200 }, () => {
        const { status: answered, headers } = errorReply(refused)
        expect(answered).toBe(kind === 'overloaded' ? 503 : 429)
        const ms = Number(headers['retry-after-ms'])
        expect(Number(headers['retry-after'])).toBe(Math.max(1, Math.ceil(ms / 1000)))
        return ms
      })
      const least = Math.min(retryAfterMs, 60_000)
      expect(Math.min(...waits)).toBeGreaterThanOrEqual(least)
      expect(Math.max(...waits)).toBeLessThanOrEqual(least + spreadMs)
      // 200 draws over the spread: more than a handful of instants, and
      // spread over most of it (a quarter at either end is empty with
      // probability 2 × 0.75^200).
      if (spreadMs > 0) {
        expect(new Set(waits).size).toBeGreaterThan(50)
        expect(Math.max(...waits) - Math.min(...waits)).toBeGreaterThan(spreadMs / 2)
      }
    },
  )
})
