import { anthropicErrors, geminiErrors, openAIErrors } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import { errorOver } from './support/errorOver.js'

/**
 * A 429 says which limit it hit when the provider says so: the requests per
 * minute (or day), or the tokens. `limitedBy` carries it; absent when the
 * answer does not tell (and on any failure that is no rate limit).
 */

const openAIBody = (type: string, message: string) =>
  JSON.stringify({ error: { message, type, param: null, code: 'rate_limit_exceeded' } })
const anthropicBody = (message: string) =>
  JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message } })
const geminiBody = (quotaId: string, metric: string) =>
  JSON.stringify({
    error: {
      code: 429,
      message: `You exceeded your current quota. * Quota exceeded for metric: ${metric}, limit: 250000, model: gemini-2.5-flash\nPlease retry in 20s.`,
      status: 'RESOURCE_EXHAUSTED',
      details: [
        {
          '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
          violations: [
            {
              quotaMetric: metric,
              quotaId,
              quotaDimensions: { location: 'global', model: 'gemini-2.5-flash' },
              quotaValue: '250000',
            },
          ],
        },
      ],
    },
  })

describe('OpenAI (and compatible) 429s', () => {
  it('type tokens / requests, as OpenAI sends them', async () => {
    const tpm = dialects.openai.normalizeError(
      await errorOver(
        429,
        openAIBody(
          'tokens',
          'Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29500, Requested 900. Please try again in 800ms.',
        ),
      ),
    )
    expect([tpm?.kind, tpm?.limitedBy]).toEqual(['rate_limited', 'tokens'])
    const rpm = dialects.openai.normalizeError(
      await errorOver(
        429,
        openAIBody(
          'requests',
          'Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1.',
        ),
      ),
    )
    expect([rpm?.kind, rpm?.limitedBy]).toEqual(['rate_limited', 'requests'])
  })

  it('a compatible server’s 429 without a type: the headers that reached 0, else the message', async () => {
    const byHeader = dialects.deepseek.normalizeError(
      await errorOver(429, JSON.stringify({ error: { message: 'Too many requests' } }), {
        'x-ratelimit-remaining-requests': '12',
        'x-ratelimit-remaining-tokens': '0',
      }),
    )
    expect(byHeader?.limitedBy).toBe('tokens')
    const byText = dialects.openai.normalizeError(
      await errorOver(
        429,
        JSON.stringify({ error: { message: 'You are over 60 requests per minute' } }),
      ),
    )
    expect(byText?.limitedBy).toBe('requests')
    const unknown = dialects.openai.normalizeError(
      await errorOver(429, JSON.stringify({ error: { message: 'Slow down' } })),
    )
    expect(unknown?.kind).toBe('rate_limited')
    expect(unknown).not.toHaveProperty('limitedBy')
  })

  it('the testkit’s rate limit (its RPM headers and type) is a request limit', async () => {
    const fake = openAIErrors.rateLimited()
    const e = dialects.openai.normalizeError(
      await errorOver(fake.status, JSON.stringify(fake.body), fake.headers),
    )
    expect(e?.limitedBy).toBe('requests')
  })
})

describe('Anthropic 429s', () => {
  it('the input or output tokens header at 0 is a token limit; the requests header, a request limit', async () => {
    const input = dialects.anthropic.normalizeError(
      await errorOver(429, anthropicBody('Rate limited'), {
        'anthropic-ratelimit-requests-remaining': '40',
        'anthropic-ratelimit-input-tokens-remaining': '0',
        'anthropic-ratelimit-output-tokens-remaining': '8000',
      }),
    )
    expect([input?.kind, input?.limitedBy]).toEqual(['rate_limited', 'tokens'])
    const output = dialects.anthropic.normalizeError(
      await errorOver(429, anthropicBody('Rate limited'), {
        'anthropic-ratelimit-output-tokens-remaining': '0',
      }),
    )
    expect(output?.limitedBy).toBe('tokens')
    const requests = dialects.anthropic.normalizeError(
      await errorOver(429, anthropicBody('Rate limited'), {
        'anthropic-ratelimit-requests-remaining': '0',
        'anthropic-ratelimit-input-tokens-remaining': '20000',
      }),
    )
    expect(requests?.limitedBy).toBe('requests')
  })

  it('requests at 0 is a request limit though a token count reads 0: those are rounded to the nearest thousand', async () => {
    // docs.claude.com/en/api/rate-limits: the token `remaining` headers are
    // rounded to the nearest thousand, so "0" is anything under 500 left;
    // the request count is exact, and at 0 it refuses any request.
    const e = dialects.anthropic.normalizeError(
      await errorOver(
        429,
        anthropicBody(
          'This request would exceed your account’s rate limit. Please try again later.',
        ),
        {
          'retry-after': '7',
          'anthropic-ratelimit-requests-limit': '50',
          'anthropic-ratelimit-requests-remaining': '0',
          'anthropic-ratelimit-input-tokens-limit': '30000',
          'anthropic-ratelimit-input-tokens-remaining': '0',
          'anthropic-ratelimit-output-tokens-limit': '8000',
          'anthropic-ratelimit-output-tokens-remaining': '8000',
          'anthropic-ratelimit-tokens-limit': '38000',
          'anthropic-ratelimit-tokens-remaining': '0',
        },
      ),
    )
    expect([e?.kind, e?.limitedBy]).toEqual(['rate_limited', 'requests'])
    // Exact counts both at 0 (OpenAI's headers) still name neither.
    const both = dialects.deepseek.normalizeError(
      await errorOver(429, JSON.stringify({ error: { message: 'Slow down' } }), {
        'x-ratelimit-remaining-requests': '0',
        'x-ratelimit-remaining-tokens': '0',
      }),
    )
    expect(both?.kind).toBe('rate_limited')
    expect(both).not.toHaveProperty('limitedBy')
  })

  it('without headers, the message: “… 30,000 input tokens per minute”', async () => {
    const e = dialects.anthropic.normalizeError(
      await errorOver(
        429,
        anthropicBody(
          'This request would exceed the rate limit for your organization (org-x) of 30,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.',
        ),
      ),
    )
    expect(e?.limitedBy).toBe('tokens')
  })

  it('the testkit’s 429 names one limit in its headers and its words alike: requests by default, tokens when asked', async () => {
    const byHeaders = async (fake: ReturnType<typeof anthropicErrors.rateLimited>) =>
      dialects.anthropic.normalizeError(
        await errorOver(fake.status, JSON.stringify(fake.body), fake.headers),
      )?.limitedBy
    // The words alone: an error frame mid-stream carries no headers.
    const byWords = (fake: ReturnType<typeof anthropicErrors.rateLimited>) =>
      dialects.anthropic.normalizeStreamError({ event: 'error', data: JSON.stringify(fake.body) })
        ?.limitedBy
    const requests = anthropicErrors.rateLimited()
    expect([await byHeaders(requests), byWords(requests)]).toEqual(['requests', 'requests'])
    for (const limit of ['input_tokens', 'output_tokens'] as const) {
      const tokens = anthropicErrors.rateLimited({ limit })
      expect([limit, await byHeaders(tokens), byWords(tokens)]).toEqual([limit, 'tokens', 'tokens'])
    }
  })

  it('a 529 overload says no limit', async () => {
    const fake = anthropicErrors.overloaded()
    const e = dialects.anthropic.normalizeError(
      await errorOver(fake.status, JSON.stringify(fake.body), fake.headers),
    )
    expect(e?.kind).toBe('overloaded')
    expect(e).not.toHaveProperty('limitedBy')
  })
})

describe('Gemini 429s', () => {
  it('a QuotaFailure whose quotaId names Tokens is a token limit; Requests, a request limit', async () => {
    const tokens = dialects.gemini.normalizeError(
      await errorOver(
        429,
        geminiBody(
          'GenerateContentInputTokensPerModelPerMinute-FreeTier',
          'generativelanguage.googleapis.com/generate_content_free_tier_input_token_count',
        ),
      ),
    )
    expect([tokens?.kind, tokens?.limitedBy]).toEqual(['rate_limited', 'tokens'])
    const fake = geminiErrors.resourceExhausted()
    const requests = dialects.gemini.normalizeError(
      await errorOver(fake.status, JSON.stringify(fake.body), fake.headers),
    )
    expect([requests?.kind, requests?.limitedBy]).toEqual(['rate_limited', 'requests'])
  })
})

describe('codes that name the limit', () => {
  it('ERNIE 336501 / 336502, Doubao’s RPM and TPM codes, DashScope’s throttles', async () => {
    const ernie = (code: number) =>
      dialects.ernie.normalizeError({
        status: 200,
        body: JSON.stringify({ error_code: code, error_msg: 'limit' }),
      })?.limitedBy
    expect([ernie(336501), ernie(336502)]).toEqual(['requests', 'tokens'])
    const doubao = async (code: string) =>
      dialects.doubao.normalizeError(
        await errorOver(
          429,
          JSON.stringify({ error: { code, message: 'limit', type: 'TooManyRequests' } }),
        ),
      )?.limitedBy
    expect(await doubao('ModelAccountTpmRateLimitExceeded')).toBe('tokens')
    expect(await doubao('RateLimitExceeded.EndpointRPMExceeded')).toBe('requests')
    const qwen = async (code: string) =>
      dialects.qwen.normalizeError(
        await errorOver(429, JSON.stringify({ code, message: 'Requests rate limit exceeded' })),
      )?.limitedBy
    expect(await qwen('Throttling.RateQuota')).toBe('requests')
    expect(await qwen('Throttling.AllocationQuota')).toBe('tokens')
  })

  it('Qwen compatible mode, the endpoint most call: limit_requests, and its token throttle in billing words', async () => {
    const compat = async (error: object) =>
      dialects.qwen.normalizeError(await errorOver(429, JSON.stringify({ error })))
    const requests = await compat({
      message: 'Requests rate limit exceeded, please try again later.',
      type: 'limit_requests',
      code: 'limit_requests',
    })
    expect([requests?.kind, requests?.limitedBy]).toEqual(['rate_limited', 'requests'])
    const tokens = await compat({
      message:
        'You exceeded your current quota, please check your plan and billing details. For details, see: https://help.aliyun.com/zh/model-studio/error-code#token-limit',
      type: 'insufficient_quota',
      code: 'insufficient_quota',
    })
    expect([tokens?.kind, tokens?.limitedBy]).toEqual(['rate_limited', 'tokens'])
  })
})

describe('an error frame in a stream (no headers): the words', () => {
  it('Anthropic’s “Number of request tokens …” is tokens, “Number of requests …” requests', () => {
    const frame = (message: string) =>
      dialects.anthropic.normalizeStreamError({
        event: 'error',
        data: anthropicBody(message),
      })?.limitedBy
    expect(frame('Number of request tokens has exceeded your per-minute rate limit')).toBe('tokens')
    expect(frame('Number of requests has exceeded your per-minute rate limit')).toBe('requests')
  })
})
