import { type FakeProvider, geminiErrors } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * A provider with one key whose quota for the model is zero (Gemini's
 * `RESOURCE_EXHAUSTED` with `limit: 0`: the model is not in the key's
 * tier). llm retires that model on the key (the quota names the model);
 * when it cooled it instead, admission saw a finite wait on the provider —
 * the key's own — and the reply read it as another key only cooling: 429 `rate_limit_exceeded`, "quota
 * exhausted, another key rate limited", `Retry-After: 36` — a rate limit
 * to wait out, on a key that does not exist. It is the README's quota
 * exhaustion: 429 `insufficient_quota`.
 */
describe("a quota at zero on a provider's only key", () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  it('is answered as quota exhaustion, naming no other key and no wait', async () => {
    const provider = await fakeProvider('gemini', ['only-key-0001'])
    fake = provider.fake
    fake.setReply(geminiErrors.resourceExhausted({ limit: 0 }))
    harness = await startHarness({
      providers: { p: provider.entry },
      models: { m: fallback(['p', 'gemini-2.0-flash']) },
    })
    const res = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    })
    const body = (await res.json()) as { error: { code: string; type: string; message: string } }
    expect(`${res.status} ${body.error.code}`).toBe('429 insufficient_quota')
    expect(body.error.message).toBe(
      'no provider could answer (p/gemini-2.0-flash: quota exhausted)',
    )
    expect(res.headers.get('retry-after')).toBeNull()
    expect(res.headers.get('x-should-retry')).toBe('false')
    expect(fake.requests).toHaveLength(1)
  })
})
