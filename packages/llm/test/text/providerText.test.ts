import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import {
  callModel,
  createAdapter,
  type Dialect,
  dialects,
  isInvalidChatRequest,
  isProviderReplyError,
  isRequestRejected,
  providerText,
} from '../../src/index.js'
import { useFakes } from '../call/support/fakes.js'

const fakes = useFakes()

/** Anything a terminal or a log viewer would act on or hide, but the joiners words and emoji are made of. */
const UNPRINTABLE = /(?![\u200c\u200d])[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/u

describe('a provider’s words as a direct user of llm gets them', () => {
  it('a message of hidden characters only reads as its status, not as nothing', () => {
    const error = dialects.openai.normalizeError({
      status: 500,
      body: JSON.stringify({ error: { message: '\u200b\u0000', type: 'server_error' } }),
    })
    expect(error?.message).toBe('HTTP 500')
    // Long enough to be cut: no lone `…` either.
    const long = dialects.openai.normalizeError({
      status: 500,
      body: JSON.stringify({ error: { message: '\u200b'.repeat(3000), type: 'server_error' } }),
    })
    expect(long?.message).toBe('HTTP 500')
  })

  it('an error of hidden characters only inside a 200 (a stream’s error event, a body that is an error) does not read as "HTTP 200"', () => {
    const hidden = '\u200b\u0000\u2028'
    const frames = [
      dialects.anthropic.normalizeStreamError({
        event: 'error',
        data: JSON.stringify({ type: 'error', error: { type: 'api_error', message: hidden } }),
      }),
      dialects.openai.normalizeStreamError({
        event: undefined,
        data: JSON.stringify({ error: { message: hidden, type: 'server_error' } }),
      }),
      dialects.anthropic.normalizeStreamError({ event: 'error', data: hidden }),
    ]
    for (const error of frames) {
      expect(error?.status).toBe(200)
      expect(error?.message).toBe('an error inside an HTTP 200 answer, with no readable message')
    }
    // A refusal's status alone still says it.
    const status = dialects.anthropic.normalizeError({
      status: 529,
      body: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: hidden } }),
    })
    expect(status?.message).toBe('HTTP 529')
  })

  it('a short word after "basic" or "bearer" is no credential; a token is', () => {
    const error = dialects.openai.normalizeError({
      status: 400,
      body: JSON.stringify({
        error: {
          message: 'Bearer abc123defgh rejected, bearer abcdefghijklmnopqrstuvwxyz too',
          type: 'invalid_request_error',
          param: 'basic auth_header',
        },
      }),
    })
    expect(error?.param).toBe('basic auth_header')
    // The gateway passes a provider's param and code through providerText.
    expect(providerText('basic auth_header', 200)).toBe('basic auth_header')
    expect(providerText('Basic authentication failed', 200)).toBe('Basic authentication failed')
    // Credentials without a digit: base64 of "user:pass", a key of letters in both cases.
    expect(providerText('Authorization: Basic dXNlcjpwYXNz rejected', 200)).toBe(
      'Authorization: Basic [redacted] rejected',
    )
    expect(providerText('header was Bearer AbCdEfGhIjKlMnOp', 200)).toBe(
      'header was Bearer [redacted]',
    )
    expect(error?.message).toBe('Bearer [redacted] rejected, bearer [redacted] too')
  })

  it('a normalised error’s message, param and code are one printable line: no escape, NUL, BEL or bidi override', () => {
    const error = dialects.openai.normalizeError({
      status: 400,
      body: JSON.stringify({
        error: {
          message: 'bad \x1b[31mred\x1b[0m\r\nline\u2028two \u202eevil',
          type: 'invalid_request_error',
          param: 'messages\x1b[2J\0',
          code: 'x\u202eevil\x07',
        },
      }),
    })
    expect(error?.message).toBe('bad [31mred [0m line two evil')
    expect(error?.param).toBe('messages [2J')
    expect(error?.providerCode).toBe('x evil')
  })

  it('the joiners of a language or an emoji and a flag’s tags are kept', () => {
    const words =
      'می\u200cخواهم 👨\u200d👩\u200d👧 🏴\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}'
    const error = dialects.anthropic.normalizeError({
      status: 400,
      body: JSON.stringify({ error: { type: 'invalid_request_error', message: words } }),
    })
    expect(error?.message).toBe(words)
  })

  it('a param or code of hidden characters only is no param or code; a long one is cut between whole characters', () => {
    const hidden = dialects.openai.normalizeError({
      status: 400,
      body: JSON.stringify({ error: { message: 'm', type: 'x', param: '\0\u202e', code: '\x07' } }),
    })
    expect(hidden?.param).toBeUndefined()
    expect(hidden?.providerCode).toBeUndefined()
    const long = dialects.openai.normalizeError({
      status: 400,
      body: JSON.stringify({ error: { message: 'm', type: 'x', param: `\0${'😀'.repeat(150)}` } }),
    })
    expect(long?.param?.length).toBeLessThanOrEqual(200)
    expect(long?.param).not.toMatch(UNPRINTABLE)
  })

  it('a stop sequence Anthropic refuses is shown with its invisible characters escaped', () => {
    let thrown: unknown
    try {
      dialects.anthropic.buildRequest(
        { maxTokens: 10, messages: [{ role: 'user', content: 'hi' }], stop: ['\u2028\ufeff'] },
        'claude-sonnet-4-5',
      )
    } catch (error) {
      thrown = error
    }
    expect(isInvalidChatRequest(thrown)).toBe(true)
    const message = (thrown as Error).message
    expect(message).not.toMatch(UNPRINTABLE)
    expect(message).toContain('"\\u2028\\ufeff"')
  })

  it('an error a parser builds from a provider’s words (Gemini’s block reason) is as printable as a normalised one', () => {
    let thrown: unknown
    try {
      dialects.gemini.parseResponse({
        promptFeedback: { blockReason: 'SAFETY\x1b[2J\u202eevil\x07' },
      })
    } catch (error) {
      thrown = error
    }
    expect(isProviderReplyError(thrown)).toBe(true)
    if (!isProviderReplyError(thrown)) return
    expect(thrown.error.providerCode).toBe('blockReason:SAFETY [2J evil')
    expect(thrown.error.message).toBe('prompt blocked: SAFETY [2J evil')
    expect(thrown.message).not.toMatch(UNPRINTABLE)
  })

  it('a custom dialect’s error reaches the caller printable: the failed attempt’s message, param and code', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: reply.error(400, { error: {} }) })
    const raw: Dialect = {
      ...dialects.openai,
      normalizeError: (input) => ({
        kind: 'bad_request',
        retryable: false,
        status: input.status,
        message: 'bad \x1b[31mred\u2028',
        param: '\0',
        providerCode: 'x\u202eevil\x07',
      }),
    }
    const error = await callModel({
      models: [
        fakes.adapter(createAdapter(raw, { baseURL: fake.baseURL, apiKey: 'k', model: 'm' })),
      ],
      request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 8 },
    }).catch((e: unknown) => e)
    expect(isRequestRejected(error)).toBe(true)
    if (!isRequestRejected(error)) return
    const cause = error.causes[0]?.cause
    expect(cause).toMatchObject({
      providerCode: 'x evil',
      normalized: { message: 'bad [31mred', providerCode: 'x evil' },
    })
    expect((cause as { normalized: object }).normalized).not.toHaveProperty('param')
    expect(error.message).not.toMatch(UNPRINTABLE)
  })
})
