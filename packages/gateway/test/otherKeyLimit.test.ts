import { Admission, anthropic, callModel, openAICompatible } from '@hourglass/llm'
import { type FakeProvider, openAIErrors, reply, startFakeProvider } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { errorReply } from '../src/index.js'

/**
 * A 429 on key 1, then a 401 on key 2 with the attempts spent: the client
 * gets a 429, since key 1 is back once its cooldown ends (test/keys.test.ts).
 * That 429 said "another key rate limited" and `type: requests` whatever
 * held key 1 back: a token limit (where a smaller request helps) read as a
 * request limit. It now names the limit admission says holds the key, and
 * counts it for `type` as the main 429 does (test/rateLimitType.test.ts);
 * none named, the message names none and `type` stays `requests`.
 */
describe('the 429 for a provider whose other key cools names the limit that holds it', () => {
  let fake: FakeProvider | undefined
  afterEach(async () => {
    await fake?.close()
    fake = undefined
  })

  /** The error callModel ends with: key 1 rate limited (20 s), key 2 rejected, 2 attempts spent. */
  async function otherKeyCooling(first = openAIErrors.rateLimited({ retryAfterS: 20 })) {
    fake = await startFakeProvider({ dialect: 'openai' })
    fake.enqueue(
      first,
      reply.error(401, {
        error: {
          message: 'Incorrect API key',
          type: 'invalid_request_error',
          code: 'invalid_api_key',
        },
      }),
    )
    const adapter = openAICompatible({
      dialect: 'openai',
      name: 'openai',
      baseURL: fake.baseURL,
      apiKeys: ['sk-first-key-0001', 'sk-second-key-0002'],
      model: 'gpt-4o-mini',
    })
    const admission = new Admission()
    const error = await callModel({
      models: [adapter],
      request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 16 },
      retry: { maxAttempts: 2 },
      limits: { admission },
    }).then(
      () => expect.unreachable('answered'),
      (e: unknown) => e,
    )
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-first-key-0001', 'sk-second-key-0002'])
    // What the gateway asks admission: how long until a key is back (key 1's cooldown).
    const forecast = admission.forecast({
      provider: adapter.name,
      endpoint: adapter.baseURL,
      keys: adapter.apiKeys,
      model: adapter.model,
    })
    expect(forecast.waitMs).toBeGreaterThan(15_000)
    return { error, waitMs: forecast.waitMs, forecast }
  }

  it.each([
    ['tokens', 'tokens', 'openai/gpt-4o-mini: auth, another key rate limited on tokens'],
    ['requests', 'requests', 'openai/gpt-4o-mini: auth, another key rate limited on requests'],
    [undefined, 'requests', 'openai/gpt-4o-mini: auth, another key rate limited)'],
  ] as const)('held by %s: type %s, the message says so', async (limitedBy, type, says) => {
    const { error, waitMs } = await otherKeyCooling()
    const shaped = errorReply(error, () => ({ waitMs, limitedBy }))
    expect(`${shaped.status} ${shaped.body.error.code} ${shaped.body.error.type}`).toBe(
      `429 rate_limit_exceeded ${type}`,
    )
    expect(shaped.body.error.message).toContain(says)
    expect(Number(shaped.headers['retry-after'])).toBeGreaterThanOrEqual(15)
  })

  // What admission's forecast says of the key left, from the 429 it met:
  // the gateway's own callback, end to end.
  it.each([
    ['tokens', openAIErrors.rateLimited({ retryAfterS: 20, limit: 'tokens' }), 'on tokens'],
    ['requests', openAIErrors.rateLimited({ retryAfterS: 20 }), 'on requests'],
  ] as const)(
    'admission forecasts the key held by %s, from the 429 it met',
    async (limitedBy, first, says) => {
      const { error, forecast } = await otherKeyCooling(first)
      expect(forecast.limitedBy).toBe(limitedBy)
      const shaped = errorReply(error, () => forecast)
      expect(shaped.body.error.type).toBe(limitedBy)
      expect(shaped.body.error.message).toContain(`another key rate limited ${says}`)
    },
  )

  it('beside an overloaded provider: a 503 that names the wait, both waits being known', async () => {
    const overloaded = await startFakeProvider({ dialect: 'anthropic' })
    try {
      fake = await startFakeProvider({ dialect: 'openai' })
      fake.enqueue(
        openAIErrors.rateLimited({ retryAfterS: 20 }),
        reply.error(401, { error: { message: 'Incorrect API key', code: 'invalid_api_key' } }),
      )
      overloaded.setReply(
        reply.error(529, {
          type: 'error',
          error: { type: 'overloaded_error', message: 'Overloaded' },
        }),
      )
      const a = openAICompatible({
        dialect: 'openai',
        name: 'a',
        baseURL: fake.baseURL,
        apiKeys: ['sk-first-key-0001', 'sk-second-key-0002'],
        model: 'x',
      })
      const b = anthropic({ name: 'b', baseURL: overloaded.baseURL, apiKey: 'k', model: 'y' })
      const admission = new Admission()
      const error = await callModel({
        models: [a, b],
        request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 16 },
        retry: { maxAttempts: 2, max529Retries: 0 },
        limits: { admission },
      }).then(
        () => expect.unreachable('answered'),
        (e: unknown) => e,
      )
      const shaped = errorReply(error, (provider, model) => {
        const adapter = provider === 'a' ? a : b
        return admission.forecast({
          provider,
          endpoint: adapter.baseURL,
          keys: adapter.apiKeys,
          model,
        })
      })
      expect(shaped.status, shaped.body.error.message).toBe(503)
      // Before: no header, though key 1's wait and b's cooldown were both known.
      expect(Number(shaped.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    } finally {
      await overloaded.close()
    }
  })
})
