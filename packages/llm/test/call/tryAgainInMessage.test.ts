import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import { errorOver } from '../dialects/support/errorOver.js'
import { FAST_RETRIES, useFakes } from './support/fakes.js'

/**
 * OpenAI (and Groq, which copies its words) says in a 429's message how long
 * the limit that refused it takes to let a request through: "… on requests
 * per day (RPD): Limit 200, Used 200, Requested 1. Please try again in
 * 7m12s." The `x-ratelimit-*` headers count the per-minute limits only, so
 * on a daily limit — or a token limit whose remaining count is not 0 but
 * too small for this request — no header says it: the message is the only
 * wait the provider gives.
 */

const fakes = useFakes()

const rpd = {
  error: {
    message:
      'Rate limit reached for gpt-4o-mini in organization org-fake on requests per day (RPD): Limit 200, Used 200, Requested 1. Please try again in 7m12s. Visit https://platform.openai.com/account/rate-limits to learn more.',
    type: 'requests',
    param: null,
    code: 'rate_limit_exceeded',
  },
}
/** The per-minute counts a daily refusal still carries: room left in each. */
const perMinute = {
  'x-ratelimit-limit-requests': '500',
  'x-ratelimit-remaining-requests': '499',
  'x-ratelimit-reset-requests': '120ms',
  'x-ratelimit-limit-tokens': '200000',
  'x-ratelimit-remaining-tokens': '199980',
  'x-ratelimit-reset-tokens': '6ms',
}

describe('“Please try again in …” in a 429’s message', () => {
  it('is the wait when no header gives one: 7m12s, 800ms, 1m2.5s', async () => {
    const wait = async (message: string, headers: Record<string, string> = {}) =>
      dialects.openai.normalizeError(
        await errorOver(429, JSON.stringify({ error: { ...rpd.error, message } }), headers),
      )?.retryAfterMs
    expect(await wait(rpd.error.message, perMinute)).toBe(432_000)
    expect(
      await wait(
        'Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29500, Requested 900. Please try again in 800ms.',
      ),
    ).toBe(800)
    expect(await wait('Rate limit reached … Please try again in 1m2.5s.')).toBe(62_500)
    // A header's own wait still comes first.
    expect(await wait(rpd.error.message, { 'retry-after': '3' })).toBe(3000)
  })

  it('is no wait for anything but a rate limit: a server error, a spent quota, a stream error frame', async () => {
    const serverError = await dialects.openai.normalizeError(
      await errorOver(
        500,
        JSON.stringify({
          error: { message: 'Service busy, please try again in 30s.', type: 'server_error' },
        }),
      ),
    )
    expect([serverError?.kind, serverError?.retryAfterMs]).toEqual(['server_error', undefined])
    // A quota given a wait is cooled, not retired: its words must not give it one.
    const quota = await dialects.openai.normalizeError(
      await errorOver(
        429,
        JSON.stringify({
          error: {
            message: 'You exceeded your current quota. Please try again in 20s.',
            type: 'insufficient_quota',
            code: 'insufficient_quota',
          },
        }),
      ),
    )
    expect([quota?.kind, quota?.retryAfterMs]).toEqual(['quota_exhausted', undefined])
    const frame = dialects.openai.normalizeStreamError({
      event: undefined,
      data: JSON.stringify({
        error: { message: 'Service busy, please try again in 30s.', type: 'server_error' },
      }),
    })
    expect([frame?.kind, frame?.retryAfterMs]).toEqual(['server_error', undefined])
  })

  it('a spent daily limit is not retried every second: one request, and the call names the wait', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: reply.error(429, rpd, perMinute) })
    const failure = await callModel({
      models: [
        fakes.adapter(
          openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-a', model: 'gpt-4o-mini' }),
        ),
      ],
      request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 16 },
      retry: { delay: FAST_RETRIES },
    }).catch((e: unknown) => e)
    expect(fake.requests).toHaveLength(1)
    expect(String((failure as Error).message)).toMatch(
      /the provider asked for 432 s, beyond maxRetryAfterMs/,
    )
  })
})
