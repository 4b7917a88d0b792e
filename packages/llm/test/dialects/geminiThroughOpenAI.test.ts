import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import { FAST_RETRIES, useFakes } from '../call/support/fakes.js'
import { errorOver } from './support/errorOver.js'

/**
 * Gemini's OpenAI-compatible endpoint
 * (generativelanguage.googleapis.com/v1beta/openai) answers chat completions
 * in OpenAI's shape but its errors in Google's: a one-element array of
 * `{"error":{"code","message","status","details"}}` (verbatim in
 * continuedev/continue#8516 and n4ze3m/page-assist#406). The openai dialect
 * reads them as Gemini's own dialect does.
 */

const fakes = useFakes()

const badKey = [
  {
    error: {
      code: 400,
      message: 'API key not valid. Please pass a valid API key.',
      status: 'INVALID_ARGUMENT',
      details: [
        {
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: 'API_KEY_INVALID',
          domain: 'googleapis.com',
          metadata: { service: 'generativelanguage.googleapis.com' },
        },
        {
          '@type': 'type.googleapis.com/google.rpc.LocalizedMessage',
          locale: 'en-US',
          message: 'API key not valid. Please pass a valid API key.',
        },
      ],
    },
  },
]
const exhausted = [
  {
    error: {
      code: 429,
      message: 'Resource has been exhausted (e.g. check quota).',
      status: 'RESOURCE_EXHAUSTED',
    },
  },
]

describe('Gemini’s errors through its OpenAI-compatible endpoint', () => {
  it('a bad key is auth, not the request’s fault; a 429 keeps Google’s message, not the raw JSON', async () => {
    const key = dialects.openai.normalizeError(await errorOver(400, JSON.stringify(badKey)))
    expect(key).toMatchObject({
      kind: 'auth',
      retryable: false,
      status: 400,
      message: 'API key not valid. Please pass a valid API key.',
    })
    const limited = dialects.openai.normalizeError(await errorOver(429, JSON.stringify(exhausted)))
    expect(limited).toMatchObject({
      kind: 'rate_limited',
      message: 'Resource has been exhausted (e.g. check quota).',
    })
  })

  it('a bad key falls back to the next model instead of failing the call as a bad request', async () => {
    const google = await fakes.start({ dialect: 'openai', reply: reply.error(400, badKey) })
    const backup = await fakes.start({ dialect: 'openai', reply: reply.text('ok') })
    const kinds: unknown[] = []
    const response = await callModel({
      models: [
        fakes.adapter(
          openAICompatible({
            baseURL: google.baseURL,
            apiKey: 'AIza-bad',
            model: 'gemini-2.5-flash',
          }),
        ),
        fakes.adapter(
          openAICompatible({ baseURL: backup.baseURL, apiKey: 'sk-b', model: 'gpt-4o' }),
        ),
      ],
      request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 16 },
      retry: { delay: FAST_RETRIES },
      onAttempt: (r) => kinds.push(r.errorKind),
    })
    expect(response).toMatchObject({ text: 'ok' })
    expect(kinds).toEqual(['auth', undefined])
  })

  it('OpenAI’s own errors read as before', async () => {
    const e = dialects.openai.normalizeError(
      await errorOver(
        401,
        JSON.stringify({
          error: {
            message: 'Incorrect API key provided',
            type: 'invalid_request_error',
            code: 'invalid_api_key',
          },
        }),
      ),
    )
    expect(e).toMatchObject({ kind: 'auth', providerCode: 'invalid_api_key' })
  })
})
