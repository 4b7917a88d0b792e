import { anthropicErrors } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic as anthropicAdapter } from '../../src/adapters/anthropic.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import { isRequestRejected } from '../../src/errors/RequestRejectedError.js'
import { isStreamInterrupted } from '../../src/errors/StreamInterruptedError.js'
import { useFakes, user } from '../call/support/fakes.js'
import { errorOver } from './support/errorOver.js'

const fakes = useFakes()

const anthropic = dialects.anthropic
const err = (type: string, message: string) =>
  JSON.stringify({
    type: 'error',
    error: { type, message },
    request_id: 'req_011CSHoEeqs5C35K2UUqR7Fy',
  })

describe('Anthropic errors', () => {
  it('529 overloaded_error is retryable overload', async () => {
    expect(
      anthropic.normalizeError(await errorOver(529, err('overloaded_error', 'Overloaded'))),
    ).toMatchObject({
      kind: 'overloaded',
      retryable: true,
      status: 529,
      providerCode: 'overloaded_error',
    })
  })

  it('429 rate_limit_error waits for retry-after, and without it for the RFC 3339 reset of the exhausted limit', async () => {
    expect(
      anthropic.normalizeError(
        await errorOver(
          429,
          err(
            'rate_limit_error',
            'Number of request tokens has exceeded your per-minute rate limit',
          ),
          { 'retry-after': '12' },
        ),
      ),
    ).toMatchObject({
      kind: 'rate_limited',
      retryable: true,
      retryAfterMs: 12_000,
    })
    const nowMs = Date.parse('2025-06-01T12:00:00Z')
    const e = anthropic.normalizeError({
      status: 429,
      nowMs,
      headers: {
        'anthropic-ratelimit-requests-remaining': '0',
        'anthropic-ratelimit-requests-reset': '2025-06-01T12:00:05Z',
        'anthropic-ratelimit-tokens-remaining': '12000',
        'anthropic-ratelimit-tokens-reset': '2025-06-01T12:00:40Z',
      },
      body: err('rate_limit_error', 'rate limited'),
    })
    expect(e?.retryAfterMs).toBe(5000)
  })

  it('400 "prompt is too long" is context_too_long; 413 request_too_large is the body’s size; both permanent', () => {
    expect(
      anthropic.normalizeError({
        status: 400,
        body: err('invalid_request_error', 'prompt is too long: 215000 tokens > 200000 maximum'),
      }),
    ).toMatchObject({
      kind: 'context_too_long',
      retryable: false,
    })
    expect(
      anthropic.normalizeError({
        status: 413,
        body: err('request_too_large', 'Request exceeds the maximum allowed number of bytes.'),
      }),
    ).toMatchObject({
      kind: 'request_too_large',
      retryable: false,
    })
    expect(
      anthropic.normalizeError({
        status: 400,
        body: err('invalid_request_error', 'max_tokens: Field required'),
      }),
    ).toMatchObject({
      kind: 'bad_request',
      retryable: false,
    })
  })

  it('overloaded_error is a body heuristic: without x-should-retry it makes a 500 overload, with x-should-retry: false the header wins', async () => {
    expect(
      anthropic.normalizeError({ status: 500, body: err('overloaded_error', 'Overloaded') }),
    ).toMatchObject({ kind: 'overloaded', retryable: true })
    const e = anthropic.normalizeError(
      await errorOver(500, err('overloaded_error', 'Overloaded'), { 'x-should-retry': 'false' }),
    )
    expect(e).toMatchObject({ kind: 'server_error', retryable: false })
  })

  it('an `event: error` overloaded_error after the 200 is retryable overload', () => {
    expect(
      anthropic.normalizeStreamError({
        event: 'error',
        data: err('overloaded_error', 'Overloaded'),
      }),
    ).toMatchObject({
      kind: 'overloaded',
      retryable: true,
      status: 200,
    })
    expect(
      anthropic.normalizeStreamError({ event: 'ping', data: '{"type": "ping"}' }),
    ).toBeUndefined()
  })

  it('an `event: error` frame whose data is not JSON is still an error', () => {
    expect(
      anthropic.normalizeStreamError({ event: 'error', data: 'upstream connect error' }),
    ).toMatchObject({ kind: 'server_error', retryable: true })
  })

  it('auth, permission, not-found and billing errors are permanent', () => {
    expect(
      anthropic.normalizeError({
        status: 401,
        body: err('authentication_error', 'invalid x-api-key'),
      }),
    ).toMatchObject({ kind: 'auth', retryable: false })
    expect(
      anthropic.normalizeError({ status: 403, body: err('permission_error', 'no access') }),
    ).toMatchObject({ kind: 'auth', retryable: false })
    expect(
      anthropic.normalizeError({ status: 404, body: err('not_found_error', 'model: claude-x') }),
    ).toMatchObject({ kind: 'not_found' })
    expect(
      anthropic.normalizeError({
        status: 400,
        body: err(
          'invalid_request_error',
          'Your credit balance is too low to access the Anthropic API.',
        ),
      }),
    ).toMatchObject({
      kind: 'quota_exhausted',
      retryable: false,
    })
  })

  it('a 400 invalid_request_error that refuses the account, not the request: spend limit quota_exhausted, disabled organisation auth', () => {
    // Verbatim bodies: anthropics/claude-code#38035 and #2127 (spend limit),
    // #19028 and #72457 (disabled organisation). As bad_request they were
    // request-bound: no fallback, and the client told to fix its request.
    expect(
      anthropic.normalizeError({
        status: 400,
        body: err(
          'invalid_request_error',
          'You have reached your specified API usage limits. You will regain access on 2026-04-01 at 00:00 UTC.',
        ),
      }),
    ).toMatchObject({ kind: 'quota_exhausted', retryable: false, status: 400 })
    expect(
      anthropic.normalizeError({
        status: 400,
        body: err('invalid_request_error', 'This organization has been disabled.'),
      }),
    ).toMatchObject({ kind: 'auth', retryable: false, status: 400 })
    // A request Anthropic does refuse stays the client's to fix.
    expect(
      anthropic.normalizeError({
        status: 400,
        body: err('invalid_request_error', 'messages: at least one message is required'),
      }),
    ).toMatchObject({ kind: 'bad_request' })
  })

  // Anthropic's output filter (protected material: lyrics, a licence's
  // text) answers `invalid_request_error` "Output blocked by content
  // filtering policy", over HTTP 400 or as a stream's `error` event after
  // some text (anthropics/claude-code#6195, #18542, #55789, #58367). Read
  // as `bad_request`, the caller — and a gateway's client, told
  // `invalid_request` — was blamed for a request nothing was wrong with.
  it('"Output blocked by content filtering policy" is content_policy, over HTTP and mid-stream', async () => {
    const over = anthropic.normalizeError(
      await errorOver(400, JSON.stringify(anthropicErrors.outputBlocked().body)),
    )
    expect(over).toMatchObject({
      kind: 'content_policy',
      retryable: false,
      status: 400,
      providerCode: 'invalid_request_error',
      message: 'Output blocked by content filtering policy',
    })
    const claude = await fakes.start({ dialect: 'anthropic' })
    claude.enqueue(
      anthropicErrors.outputBlocked(),
      anthropicErrors.outputBlockedInStream({ afterTokens: 2, text: 'Verse one goes' }),
    )
    const model = fakes.adapter(
      anthropicAdapter({ baseURL: claude.baseURL, apiKey: 'sk-ant', model: 'claude-sonnet-4-5' }),
    )
    const request = { messages: [user('the lyrics, please')], maxTokens: 64 }
    const refused = await callModel({
      models: [model],
      request,
      limits: { admission: false },
    }).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(isRequestRejected(refused)).toBe(true)
    expect(refused).toMatchObject({ kind: 'content_policy' })
    let text = ''
    let cut: unknown
    try {
      const stream = callModel({
        models: [model],
        request: { ...request, stream: true },
        limits: { admission: false },
      })
      for await (const event of stream) if (event.type === 'text') text += event.text
    } catch (error) {
      cut = error
    }
    expect(text).toBe('Verse one')
    expect(isStreamInterrupted(cut)).toBe(true)
    expect((cut as Error).cause).toMatchObject({ kind: 'content_policy', status: 200 })
    // Neither was asked again.
    expect(claude.requests).toHaveLength(2)
  })
})
