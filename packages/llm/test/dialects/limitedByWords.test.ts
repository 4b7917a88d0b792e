import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import { errorOver } from './support/errorOver.js'

/**
 * When neither a code nor a remaining-count header says which limit a 429
 * hit, the provider's words do: the abbreviations the Chinese providers and
 * their relays write (QPS, TPS, TPM), DashScope's "Requests rate limit
 * exceeded", Gemini's quota metric names. An abbreviation counts only as a
 * word of its own: "https" holds no TPS.
 */

/** A 429 in OpenAI's shape with a code that names no limit, as relays and compatible servers send. */
const relayed = async (message: string) =>
  dialects.openai.normalizeError(
    await errorOver(
      429,
      JSON.stringify({
        error: { message, type: 'rate_limit_exceeded', code: 'rate_limit_exceeded' },
      }),
    ),
  )

describe('the words of a 429 name its limit', () => {
  it('QPS (queries per second) is a request limit: ERNIE’s “Open api qps request limit reached”', async () => {
    const e = await relayed('Open api qps request limit reached')
    expect([e?.kind, e?.limitedBy]).toEqual(['rate_limited', 'requests'])
    expect((await relayed('QPS limit exceeded, please slow down'))?.limitedBy).toBe('requests')
    expect((await relayed('Too many queries per second'))?.limitedBy).toBe('requests')
  })

  it('TPS and TPM are token limits: “Details: TPS limit reached.”, Ark’s “TPM (Tokens Per Minute) limit of the model …”', async () => {
    expect(
      (await relayed('Request was rejected due to rate limiting. Details: TPS limit reached.'))
        ?.limitedBy,
    ).toBe('tokens')
    expect(
      (
        await relayed(
          'TPM (Tokens Per Minute) limit of the model doubao-seed-1-6 is exceeded. Please try again later',
        )
      )?.limitedBy,
    ).toBe('tokens')
  })

  it("Azure OpenAI's “exceeded token rate limit” is a token limit, its “exceeded call rate limit” a request limit", async () => {
    // Verbatim shapes: microsoft/sample-app-aoai-chatGPT#406, langchain-ai/langchain#12986.
    const azure = async (message: string) =>
      dialects.openai.normalizeError(
        await errorOver(429, JSON.stringify({ error: { code: '429', message } })),
      )?.limitedBy
    expect(
      await azure(
        'Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-01 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 56 seconds.',
      ),
    ).toBe('tokens')
    expect(
      await azure(
        'Requests to the Embeddings_Create Operation under Azure OpenAI API version 2023-07-01-preview have exceeded call rate limit of your current OpenAI S0 pricing tier. Please retry after 3 seconds.',
      ),
    ).toBe('requests')
  })

  it('TPS spelled out as transactions per second counts requests, not tokens', async () => {
    expect(
      (await relayed('You have exceeded the transactions per second (TPS) limit of this endpoint'))
        ?.limitedBy,
    ).toBe('requests')
  })

  it('no TPS inside another word or a link: https, a host, a path', async () => {
    expect(
      (await relayed('Rate limit reached for RPM, see https://tpsdocs.example.com/limits/tps'))
        ?.limitedBy,
    ).toBe('requests')
    expect((await relayed('Slow down; see https://example.com/steps'))?.limitedBy).toBeUndefined()
    // A link ends where URL characters do, full-width punctuation included.
    expect(
      (await relayed('详见 https://help.aliyun.com/zh/model-studio/rate-limit，TPM 超限'))
        ?.limitedBy,
    ).toBe('tokens')
    // … and at the punctuation prose puts after a link.
    expect(
      (await relayed('Too many requests (see https://help.aliyun.com/error-code),TPM exceeded'))
        ?.limitedBy,
    ).toBe('tokens')
    expect(
      (await relayed('Throttled; see https://example.com/limits;TPM exceeded'))?.limitedBy,
    ).toBe('tokens')
  })

  it('DashScope’s “Requests rate limit exceeded” under its bare Throttling code, and its burst guard', async () => {
    const native = async (code: string, message: string) =>
      dialects.qwen.normalizeError(await errorOver(429, JSON.stringify({ code, message })))
    const throttled = await native(
      'Throttling',
      'Requests rate limit exceeded, please try again later.',
    )
    expect([throttled?.kind, throttled?.limitedBy]).toEqual(['rate_limited', 'requests'])
    const burst = await native(
      'Throttling.BurstRate',
      'Request rate increased too quickly, please slow down.',
    )
    expect([burst?.kind, burst?.limitedBy]).toEqual(['rate_limited', 'requests'])
    // The same words through a relay's generic code.
    expect(
      (await relayed('Requests rate limit exceeded, please try again later.'))?.limitedBy,
    ).toBe('requests')
  })

  it('Gemini’s quota metric names, when no QuotaFailure detail came along (its OpenAI-compatible endpoint)', async () => {
    const compat = async (metric: string) =>
      dialects.openai.normalizeError(
        await errorOver(
          429,
          JSON.stringify([
            {
              error: {
                code: 429,
                message: `You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: ${metric}, limit: 10, model: gemini-2.5-flash\nPlease retry in 20s.`,
                status: 'RESOURCE_EXHAUSTED',
              },
            },
          ]),
        ),
      )
    expect(
      (await compat('generativelanguage.googleapis.com/generate_content_free_tier_requests'))
        ?.limitedBy,
    ).toBe('requests')
    expect(
      (
        await compat(
          'generativelanguage.googleapis.com/generate_content_free_tier_input_token_count',
        )
      )?.limitedBy,
    ).toBe('tokens')
  })

  it('words that name no limit say nothing: “Too Many Requests”, “Rate limited”', async () => {
    expect((await relayed('Too Many Requests'))?.limitedBy).toBeUndefined()
    expect((await relayed('Rate limited'))?.limitedBy).toBeUndefined()
    // A body with no message is read whole: its generic code names no limit either.
    const bare = dialects.openai.normalizeError(
      await errorOver(429, JSON.stringify({ error: { code: 'too_many_requests' } })),
    )
    expect([bare?.kind, bare?.limitedBy]).toEqual(['rate_limited', undefined])
  })
})
