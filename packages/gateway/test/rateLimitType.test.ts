import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * OpenAI's 429 says which limit was hit in `error.type`: `requests` or
 * `tokens` (a smaller request helps the one, not the other). The gateway
 * said `requests` for every rate limit; it now passes on what the provider
 * said (llm's `NormalizedError.limitedBy`), and `requests` when it did not.
 */
describe("a provider's rate limit reaches the client with the limit it named", () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  it.each([
    [
      'tokens',
      'tokens',
      'Rate limit reached on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000.',
    ],
    [
      'requests',
      'requests',
      'Rate limit reached on requests per min (RPM): Limit 500, Used 500, Requested 1.',
    ],
    [undefined, 'requests', 'slow down'],
  ])('type %s: the client reads type %s', async (type, expected, message) => {
    const provider = await fakeProvider('openai', ['k'])
    fake = provider.fake
    fake.setReply(
      reply.error(
        429,
        {
          error: { message, ...(type === undefined ? {} : { type }), code: 'rate_limit_exceeded' },
        },
        // Beyond the request's budget: not retried, the 429 is the answer.
        { 'retry-after': '30' },
      ),
    )
    harness = await startHarness({
      providers: { p: provider.entry },
      models: { m: fallback(['p', 'gpt']) },
    })
    const res = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '2000' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(res.status).toBe(429)
    const body = (await res.json()) as { error: { type: string; code: string } }
    expect(body.error).toMatchObject({ type: expected, code: 'rate_limit_exceeded' })
    expect(fake.requests).toHaveLength(1)
  })

  it.each([
    ['rpm', 'requests', { rpm: 1 }],
    ['tpm', 'tokens', { tpm: 500 }],
  ] as const)('the gateway’s own %s limit, spent: type %s', async (_name, expected, limits) => {
    const provider = await fakeProvider('openai', ['k'], { limits })
    fake = provider.fake
    harness = await startHarness({
      providers: { p: provider.entry },
      models: { m: fallback(['p', 'gpt']) },
      limits: { windowMs: 30_000 },
    })
    // 300 tokens asked of 500 a window: the first fits, the second does not
    // (nor is it bigger than the whole limit, which is a 413).
    const ask = () =>
      fetch(`${harness!.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '2000' },
        body: JSON.stringify({
          model: 'm',
          max_tokens: 300,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      })
    const first = await ask()
    expect(first.status).toBe(200)
    await first.body?.cancel()
    const res = await ask()
    expect(res.status).toBe(429)
    expect(((await res.json()) as { error: unknown }).error).toMatchObject({
      type: expected,
      code: 'rate_limit_exceeded',
    })
    expect(fake.requests).toHaveLength(1)
  })

  it.each([false, true])(
    'the next request, refused by the cooldown that 429 started, says tokens too (stream %s)',
    async (stream) => {
      const provider = await fakeProvider('openai', ['k'])
      fake = provider.fake
      fake.setReply(
        reply.error(
          429,
          {
            error: {
              message: 'Rate limit reached on tokens per min (TPM): Limit 30000',
              type: 'tokens',
              code: 'rate_limit_exceeded',
            },
          },
          { 'retry-after': '30' },
        ),
      )
      harness = await startHarness({
        providers: { p: provider.entry },
        models: { m: fallback(['p', 'gpt']) },
      })
      const ask = async () => {
        const res = await fetch(`${harness!.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-deadline-remaining-ms': '2000' },
          body: JSON.stringify({ model: 'm', stream, messages: [{ role: 'user', content: 'hi' }] }),
        })
        return { status: res.status, body: (await res.json()) as { error: { type: string } } }
      }
      const first = await ask()
      const second = await ask()
      expect([first.status, first.body.error.type]).toEqual([429, 'tokens'])
      // Refused with nothing sent: the cooldown remembers which limit started it.
      expect(fake.requests).toHaveLength(1)
      expect([second.status, second.body.error.type]).toEqual([429, 'tokens'])
    },
  )
})
