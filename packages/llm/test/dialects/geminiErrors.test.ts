import { Deadline, MAX_TIMER_MS, ManualClock } from '@hourglass/core'
import { geminiErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { gemini as geminiAdapter } from '../../src/adapters/gemini.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import type { ModelUnavailableError } from '../../src/errors/ModelUnavailableError.js'
import { ProviderError } from '../../src/errors/ProviderError.js'
import { useFakes, user } from '../call/support/fakes.js'
import { errorOver } from './support/errorOver.js'

const fakes = useFakes()

const gemini = dialects.gemini

function resourceExhausted(quotaValue: string, retryDelay: string | undefined, message: string) {
  return JSON.stringify({
    error: {
      code: 429,
      message,
      status: 'RESOURCE_EXHAUSTED',
      details: [
        {
          '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
          violations: [
            {
              quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests',
              quotaId: 'GenerateRequestsPerMinutePerProjectPerModel-FreeTier',
              quotaDimensions: { location: 'global', model: 'gemini-2.0-flash' },
              quotaValue,
            },
          ],
        },
        {
          '@type': 'type.googleapis.com/google.rpc.Help',
          links: [
            { description: 'Learn more', url: 'https://ai.google.dev/gemini-api/docs/rate-limits' },
          ],
        },
        ...(retryDelay === undefined
          ? []
          : [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay }]),
      ],
    },
  })
}

describe('Gemini errors', () => {
  it('a 2xx JSON-array answer broken by an error, whose call arguments nest too deep to serialise again, is read without throwing', () => {
    // Deep enough to overflow JSON.stringify's recursion (~5 000 levels on Node 20), with margin.
    const depth = 20_000
    const args = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`
    const body = `[{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":${args}}}]},"index":0}]},{"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}]`
    // Before: RangeError (Maximum call stack size exceeded), and the 200 was recorded as a network failure.
    expect(dialects.gemini.normalizeError({ status: 200, body })).toMatchObject({
      kind: 'server_error',
      status: 200,
    })
  })

  it('an error element in a 200 JSON array carries the usage the chunks before it reported; ProviderError keeps it off `normalized`', () => {
    const chunk = (text: string, promptTokenCount: number, candidatesTokenCount: number) => ({
      candidates: [{ content: { role: 'model', parts: [{ text }] }, index: 0 }],
      usageMetadata: { promptTokenCount, candidatesTokenCount, thoughtsTokenCount: 7 },
    })
    const error = {
      error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL' },
    }
    const body = JSON.stringify([chunk('Hel', 900, 1), chunk('lo', 1000, 500), error])
    const normalized = gemini.normalizeError({ status: 200, body })
    expect(normalized).toMatchObject({
      kind: 'server_error',
      usage: { inputTokens: 1000, outputTokens: 507, reasoningTokens: 7 },
    })
    const thrown = new ProviderError({ provider: 'gemini', model: 'm', error: normalized! })
    expect(thrown.usage).toEqual({ inputTokens: 1000, outputTokens: 507, reasoningTokens: 7 })
    expect(thrown.normalized).not.toHaveProperty('usage')
    // Nothing generated before the error, or an error status: no usage.
    expect(
      gemini.normalizeError({ status: 200, body: JSON.stringify([error]) }),
    ).not.toHaveProperty('usage')
    expect(
      gemini.normalizeError({ status: 500, body: JSON.stringify([chunk('a', 5, 1), error]) }),
    ).not.toHaveProperty('usage')
  })

  it('RESOURCE_EXHAUSTED with RetryInfo waits retryDelay ("34.4s" → 34400 ms)', async () => {
    const e = gemini.normalizeError(
      await errorOver(
        429,
        resourceExhausted(
          '15',
          '34.4s',
          'You exceeded your current quota, please check your plan and billing details.',
        ),
      ),
    )
    expect(e).toMatchObject({
      kind: 'rate_limited',
      retryable: true,
      retryAfterMs: 34_400,
      providerCode: 'RESOURCE_EXHAUSTED',
    })
  })

  it('a quota violation with limit 0 is permanent: quota_exhausted, even with a RetryInfo', () => {
    const e = gemini.normalizeError({
      status: 429,
      body: resourceExhausted(
        '0',
        '20s',
        'You exceeded your current quota. Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_input_token_count, limit: 0, model: gemini-2.5-pro',
      ),
    })
    expect(e).toMatchObject({ kind: 'quota_exhausted', retryable: false })
    // No wait lifts it: RetryInfo's 20 s is no cooldown to probe again after.
    expect(e?.retryAfterMs).toBeUndefined()
  })

  it('"limit: 0" in the message alone is enough to call the quota permanent', () => {
    const body = JSON.stringify({
      error: {
        code: 429,
        status: 'RESOURCE_EXHAUSTED',
        message: 'Quota exceeded for metric: x, limit: 0, model: gemini-2.5-pro',
      },
    })
    expect(gemini.normalizeError({ status: 429, body })).toMatchObject({
      kind: 'quota_exhausted',
      retryable: false,
    })
  })

  it('a quota at zero takes no wait from the message either, and is the model’s when the message names it (retired in that scope, not the key)', () => {
    const body = JSON.stringify({
      error: {
        code: 429,
        status: 'RESOURCE_EXHAUSTED',
        message:
          'Quota exceeded for metric: x, limit: 0, model: gemini-2.5-pro. Please retry in 20.5s.',
      },
    })
    const e = gemini.normalizeError({ status: 429, body })
    expect(e).toMatchObject({ kind: 'quota_exhausted', scope: 'model' })
    expect(e?.retryAfterMs).toBeUndefined()
  })

  it('"Please retry in 34.5s." in the message is a rate limit\'s wait only, not a server error\'s', async () => {
    const read = async (status: number, googleStatus: string, message: string) =>
      gemini.normalizeError(
        await errorOver(
          status,
          JSON.stringify({ error: { code: status, message, status: googleStatus } }),
        ),
      )
    const limited = await read(
      429,
      'RESOURCE_EXHAUSTED',
      'Resource exhausted. Please retry in 34.5s.',
    )
    expect([limited?.kind, limited?.retryAfterMs]).toEqual(['rate_limited', 34_500])
    const internal = await read(
      500,
      'INTERNAL',
      'An internal error has occurred. Please retry in 34.5s.',
    )
    expect([internal?.kind, internal?.retryAfterMs]).toEqual(['server_error', undefined])
    const overloaded = await read(
      503,
      'UNAVAILABLE',
      'The model is overloaded. Please retry in 34.5s.',
    )
    expect([overloaded?.kind, overloaded?.retryAfterMs]).toEqual(['overloaded', undefined])
  })

  it('"Please retry in 2h47m56.584147483s." and "… in 717.654253ms." are waits too: Google writes a Go-style duration', async () => {
    // A spent free tier's daily requests, as Gemini words it when no
    // RetryInfo came along: the wait was lost, and the limit retried after a
    // second's backoff, again and again.
    const wait = async (message: string) =>
      gemini.normalizeError(
        await errorOver(
          429,
          JSON.stringify({ error: { code: 429, message, status: 'RESOURCE_EXHAUSTED' } }),
        ),
      )?.retryAfterMs
    expect(
      await wait(
        'You exceeded your current quota, please check your plan and billing details. * Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 20, model: gemini-2.5-flash Please retry in 2h47m56.584147483s.',
      ),
    ).toBe(10_076_585)
    expect(await wait('Resource exhausted. Please retry in 717.654253ms.')).toBe(718)
    expect(await wait('Resource exhausted. Please retry in 34.427s.')).toBe(34_427)
  })

  it('a Retry-After header wins over the body’s RetryInfo', () => {
    const e = gemini.normalizeError({
      status: 429,
      headers: { 'retry-after': '2' },
      body: resourceExhausted('15', '34.4s', 'quota'),
    })
    expect(e?.retryAfterMs).toBe(2000)
  })

  it('503 UNAVAILABLE "model is overloaded" is overload; an invalid API key is auth', () => {
    const overloaded = JSON.stringify({
      error: {
        code: 503,
        message: 'The model is overloaded. Please try again later.',
        status: 'UNAVAILABLE',
      },
    })
    expect(gemini.normalizeError({ status: 503, body: overloaded })).toMatchObject({
      kind: 'overloaded',
      retryable: true,
    })
    const badKey = JSON.stringify({
      error: {
        code: 400,
        message: 'API key not valid. Please pass a valid API key.',
        status: 'INVALID_ARGUMENT',
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: 'API_KEY_INVALID',
            domain: 'googleapis.com',
          },
        ],
      },
    })
    expect(gemini.normalizeError({ status: 400, body: badKey })).toMatchObject({
      kind: 'auth',
      retryable: false,
    })
  })

  it('an over-long prompt is context_too_long', () => {
    const body = JSON.stringify({
      error: {
        code: 400,
        message:
          'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).',
        status: 'INVALID_ARGUMENT',
      },
    })
    expect(gemini.normalizeError({ status: 400, body })).toMatchObject({
      kind: 'context_too_long',
      retryable: false,
    })
  })

  // Gemini refuses a body over its byte limit with a 400 INVALID_ARGUMENT
  // "Request payload size exceeds the limit: 20971520 bytes." — its 413.
  // Read as bad_request, the call ended as RequestRejectedError, the
  // fallback never asked and the client told to fix its request.
  it('400 "Request payload size exceeds the limit" is request_too_large: the next model answers', async () => {
    const e = gemini.normalizeError(
      await errorOver(400, JSON.stringify(geminiErrors.payloadTooLarge().body)),
    )
    expect(e).toMatchObject({
      kind: 'request_too_large',
      retryable: false,
      status: 400,
      providerCode: 'INVALID_ARGUMENT',
      message: 'Request payload size exceeds the limit: 20971520 bytes.',
    })
    // Another INVALID_ARGUMENT stays the client's to fix.
    expect(
      gemini.normalizeError({
        status: 400,
        body: JSON.stringify(geminiErrors.invalidArgument().body),
      }),
    ).toMatchObject({ kind: 'bad_request' })
    const flash = await fakes.start({ dialect: 'gemini' })
    flash.enqueue(geminiErrors.payloadTooLarge())
    const backup = await fakes.start({ dialect: 'openai', reply: reply.text('served') })
    const answer = await callModel({
      models: [
        fakes.adapter(
          geminiAdapter({ baseURL: flash.baseURL, apiKey: 'g', model: 'gemini-2.5-flash' }),
        ),
        fakes.adapter(openAICompatible({ baseURL: backup.baseURL, apiKey: 'o', model: 'gpt-4o' })),
      ],
      request: { messages: [user('a big one')], maxTokens: 8 },
      limits: { admission: false },
    })
    expect(answer.text).toBe('served')
    expect(flash.requests).toHaveLength(1)
  })

  it('a 200 whose prompt was blocked is a content-policy refusal, not an empty success', () => {
    const body = JSON.stringify({
      promptFeedback: { blockReason: 'SAFETY' },
      usageMetadata: { promptTokenCount: 9 },
    })
    expect(gemini.normalizeError({ status: 200, body })).toMatchObject({
      kind: 'content_policy',
      retryable: false,
      status: 200,
    })
  })

  it('an error object in an SSE data frame after the 200 is a stream error', () => {
    const data = JSON.stringify({
      error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' },
    })
    expect(gemini.normalizeStreamError({ event: undefined, data })).toMatchObject({
      kind: 'overloaded',
      status: 200,
    })
  })

  it('billing, not a rate limit: spent prepaid credits (429 or 402 RESOURCE_EXHAUSTED) and FAILED_PRECONDITION are quota_exhausted', () => {
    // Verbatim in discuss.ai.google.dev/t/170539: no details, no RetryInfo.
    const depleted = (code: number) =>
      JSON.stringify({
        error: {
          code,
          message:
            'Your prepayment credits are depleted. Please go to AI Studio at https://ai.studio/projects to manage your project and billing.',
          status: 'RESOURCE_EXHAUSTED',
        },
      })
    expect(gemini.normalizeError({ status: 429, body: depleted(429) })).toMatchObject({
      kind: 'quota_exhausted',
      retryable: false,
      providerCode: 'RESOURCE_EXHAUSTED',
    })
    expect(
      gemini.normalizeError({ status: 402, body: resourceExhausted('15', undefined, 'x') }),
    ).toMatchObject({ kind: 'quota_exhausted', retryable: false })
    // ai.google.dev/gemini-api/docs/troubleshooting: the only FAILED_PRECONDITION
    // it lists is about the project (billing off where the free tier is not offered).
    const precondition = JSON.stringify({
      error: {
        code: 400,
        message:
          'Gemini API free tier is not available in your country. Please enable billing on your project in Google AI Studio.',
        status: 'FAILED_PRECONDITION',
      },
    })
    expect(gemini.normalizeError({ status: 400, body: precondition })).toMatchObject({
      kind: 'quota_exhausted',
      retryable: false,
    })
    // The ordinary per-minute 429 stays a rate limit.
    expect(
      gemini.normalizeError({ status: 429, body: resourceExhausted('15', '34s', 'quota') }),
    ).toMatchObject({ kind: 'rate_limited', retryable: true })
  })

  it('499 CANCELLED "The operation was cancelled." (reason backendError) is a retryable server error, not the request', () => {
    // Verbatim in google-gemini/gemini-cli#20309 (under heavy load).
    const body = JSON.stringify({
      error: {
        code: 499,
        message: 'The operation was cancelled.',
        errors: [
          { message: 'The operation was cancelled.', domain: 'global', reason: 'backendError' },
        ],
        status: 'CANCELLED',
      },
    })
    expect(gemini.normalizeError({ status: 499, body })).toMatchObject({
      kind: 'server_error',
      retryable: true,
      providerCode: 'CANCELLED',
    })
  })
})

describe('RetryInfo cut to whole seconds', () => {
  it('a 429 whose message says "Please retry in 58.934310785s." beside RetryInfo\'s "58s" is waited to the millisecond, not retried a second early', async () => {
    // As Google answers (googleapis/python-genai#2114), and the testkit's fake.
    const fake = await fakes.start({ dialect: 'gemini' })
    fake.enqueue(geminiErrors.resourceExhausted({ retryDelay: '58.934310785s' }))
    const model = fakes.adapter(
      geminiAdapter({ baseURL: fake.baseURL, apiKey: 'g', model: 'gemini-2.5-flash' }),
    )
    // 10 s left: the wait does not fit, so the call fails at once naming it
    // (nothing sleeps), and the cause carries the wait admission cools by.
    using deadline = Deadline.after(10_000, { clock: new ManualClock(1_000) })
    const failed = await callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 8 },
      deadline,
      limits: { admission: false },
    }).catch((e: unknown) => e)
    expect(fake.requests).toHaveLength(1)
    const cause = (failed as ModelUnavailableError).lastCause as ProviderError
    // Before: 58 000 — the quota refilled 934 ms later, so the retry (and
    // the end of the cooldown) came too early and was refused again.
    expect(cause.normalized).toMatchObject({ kind: 'rate_limited', retryAfterMs: 58_935 })
    // RetryInfo alone (no wait in the words), or words that say another
    // wait, keep RetryInfo's.
    const alone = (retryDelay: string, message: string) =>
      gemini.normalizeError({ status: 429, body: resourceExhausted('15', retryDelay, message) })
        ?.retryAfterMs
    expect(alone('58s', 'quota')).toBe(58_000)
    expect(alone('58s', 'Please retry in 3m2s.')).toBe(58_000)
    expect(alone('0s', 'Please retry in 717.654253ms.')).toBe(718)
  })
})

describe('a wait written in a message', () => {
  it('is capped at the longest timer, as a header’s is (it reaches reasons and Retry-After as it is)', () => {
    const openai = dialects.openai.normalizeError({
      status: 429,
      headers: new Headers(),
      body: JSON.stringify({
        error: {
          message: 'Rate limit is exceeded. Try again in 999999999 seconds.',
          type: 'requests',
          code: 'rate_limit_exceeded',
        },
      }),
    })
    const gemini = dialects.gemini.normalizeError({
      status: 429,
      body: JSON.stringify({
        error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: 'Please retry in 99999999h.' },
      }),
    })
    expect([openai?.retryAfterMs, gemini?.retryAfterMs]).toEqual([MAX_TIMER_MS, MAX_TIMER_MS])
  })
})
