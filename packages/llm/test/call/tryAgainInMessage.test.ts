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

  it('Azure OpenAI\'s words are a wait too: "Please retry after 56 seconds.", "Try again in 30 seconds."', async () => {
    // Azure's 429 body is OpenAI's shape with `code: "429"` (verbatim in
    // microsoft/sample-app-aoai-chatGPT#406, langchain-ai/langchain#12986);
    // Azure API Management's "Rate limit is exceeded. Try again in 30
    // seconds." (Azure-Samples/azure-search-openai-demo#177).
    const azure = async (message: string) =>
      dialects.openai.normalizeError(
        await errorOver(429, JSON.stringify({ error: { code: '429', message } })),
      )?.retryAfterMs
    expect(
      await azure(
        'Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-01 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 56 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.',
      ),
    ).toBe(56_000)
    expect(await azure('Rate limit is exceeded. Try again in 30 seconds.')).toBe(30_000)
    expect(await azure('Rate limit is exceeded. Try again in 1 second.')).toBe(1000)
    // Still a rate limit's only: Azure's 500 with the same words gives no wait.
    const serverError = dialects.openai.normalizeError(
      await errorOver(
        500,
        JSON.stringify({ error: { code: '500', message: 'Please retry after 56 seconds.' } }),
      ),
    )
    expect([serverError?.kind, serverError?.retryAfterMs]).toEqual(['server_error', undefined])
  })

  it("a per-day limit's wait beats a per-minute reset header, which counts another limit", async () => {
    const wait = async (headers: Record<string, string>) =>
      dialects.openai.normalizeError(await errorOver(429, JSON.stringify(rpd), headers))
        ?.retryAfterMs
    // The per-minute request count is spent too, or says nothing of what is left.
    expect(
      await wait({ 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '2s' }),
    ).toBe(432_000)
    expect(await wait({ 'x-ratelimit-reset-tokens': '6ms' })).toBe(432_000)
    // A per-minute limit's message does not overrule its own header.
    const rpm = {
      error: {
        ...rpd.error,
        message:
          'Rate limit reached for gpt-4o-mini in organization org-fake on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 7m12s.',
      },
    }
    expect(
      dialects.openai.normalizeError(
        await errorOver(429, JSON.stringify(rpm), {
          'x-ratelimit-remaining-requests': '0',
          'x-ratelimit-reset-requests': '2s',
        }),
      )?.retryAfterMs,
    ).toBe(2000)
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
