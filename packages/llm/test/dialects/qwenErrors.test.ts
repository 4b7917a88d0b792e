import { qwenErrors } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import { SseDecoder } from '../../src/sse/SseDecoder.js'
import { errorOver } from './support/errorOver.js'

const qwen = dialects.qwen
const native = (code: string, message: string) =>
  JSON.stringify({ request_id: '4b1d4f6e-5a2c-9b3e-8f7d-1c2b3a4d5e6f', code, message })
const compat = (code: string, message: string) =>
  JSON.stringify({
    error: { message, type: code, param: null, code },
    id: 'chatcmpl-1',
    request_id: 'r-1',
  })

describe('Qwen / DashScope errors', () => {
  it.each([
    ['Throttling', 'Requests throttling triggered.'],
    ['Throttling.RateQuota', 'Requests rate limit exceeded, please try again later.'],
    ['Throttling.AllocationQuota', 'Allocated quota exceeded, please increase your quota limit.'],
  ])('%s on a 429 is a retryable rate limit', async (code, message) => {
    expect(qwen.normalizeError(await errorOver(429, native(code, message)))).toMatchObject({
      kind: 'rate_limited',
      retryable: true,
      status: 429,
      providerCode: code,
    })
    expect(qwen.normalizeError({ status: 429, body: compat(code, message) })).toMatchObject({
      kind: 'rate_limited',
      providerCode: code,
    })
  })

  it('a Throttling code inside an HTTP 200 body is a rate limit, not a success', async () => {
    const e = qwen.normalizeError(
      await errorOver(
        200,
        native('Throttling.RateQuota', 'Requests rate limit exceeded, please try again later.'),
      ),
    )
    expect(e).toMatchObject({
      kind: 'rate_limited',
      retryable: true,
      status: 200,
      providerCode: 'Throttling.RateQuota',
    })
  })

  it('DataInspectionFailed is a permanent content-policy refusal', () => {
    expect(
      qwen.normalizeError({
        status: 400,
        body: native('DataInspectionFailed', 'Input data may contain inappropriate content.'),
      }),
    ).toMatchObject({
      kind: 'content_policy',
      retryable: false,
    })
    expect(
      qwen.normalizeError({
        status: 400,
        body: compat('data_inspection_failed', 'Output data may contain inappropriate content.'),
      }),
    ).toMatchObject({
      kind: 'content_policy',
    })
  })

  it('an `event:error` frame after a 200 is a rate limit, read from the real native stream', () => {
    const stream =
      'id:1\nevent:result\n:HTTP_STATUS/200\ndata:{"output":{"text":"你好","finish_reason":"null"},"request_id":"r"}\n\n' +
      'id:2\nevent:error\n:HTTP_STATUS/429\ndata:{"code":"Throttling.RateQuota","message":"Requests rate limit exceeded, please try again later.","request_id":"r"}\n\n'
    const d = new SseDecoder()
    const frames = [...d.push(new TextEncoder().encode(stream)), ...d.end()]
    const errors = frames.flatMap((f) => (f.type === 'event' ? [qwen.normalizeStreamError(f)] : []))
    expect(errors[0]).toBeUndefined()
    expect(errors[1]).toMatchObject({
      kind: 'rate_limited',
      retryable: true,
      status: 200,
      providerCode: 'Throttling.RateQuota',
    })
    expect(
      frames
        .filter((f) => f.type === 'comment')
        .map((f) => (f.type === 'comment' ? f.comment : '')),
    ).toEqual(['HTTP_STATUS/200', 'HTTP_STATUS/429'])
  })

  it('an over-long prompt (InvalidParameter, "Range of input length") is context_too_long', () => {
    expect(
      qwen.normalizeError({
        status: 400,
        body: native('InvalidParameter', 'Range of input length should be [1, 129024]'),
      }),
    ).toMatchObject({ kind: 'context_too_long', retryable: false })
  })

  it('Arrearage and InvalidApiKey are permanent', () => {
    expect(
      qwen.normalizeError({
        status: 400,
        body: native(
          'Arrearage',
          'Access denied, please make sure your account is in good standing.',
        ),
      }),
    ).toMatchObject({
      kind: 'quota_exhausted',
      retryable: false,
    })
    expect(
      qwen.normalizeError({
        status: 401,
        body: native('InvalidApiKey', 'Invalid API-key provided.'),
      }),
    ).toMatchObject({ kind: 'auth', retryable: false })
  })

  describe("compatible mode's token throttle (429 insufficient_quota, error-code#token-limit)", () => {
    const tokenLimited = qwenErrors.compatibleTokenLimited()
    const tokenLimitedBody = JSON.stringify(tokenLimited.body)

    it('is a retryable rate limit that honours retry-after, not a spent account', async () => {
      const e = qwen.normalizeError(
        await errorOver(tokenLimited.status, tokenLimitedBody, { 'retry-after': '20' }),
      )
      expect(e).toMatchObject({
        kind: 'rate_limited',
        retryable: true,
        status: 429,
        providerCode: 'insufficient_quota',
        retryAfterMs: 20_000,
      })
      expect(e?.message).toMatch(/error-code#token-limit$/)
    })

    it('insufficient_quota on a 429 is a rate limit even without the link; the link alone makes one on any status', () => {
      expect(
        qwen.normalizeError({ status: 429, body: compat('insufficient_quota', 'quota exceeded') }),
      ).toMatchObject({ kind: 'rate_limited', retryable: true })
      expect(
        qwen.normalizeError({
          status: 400,
          body: compat(
            'insufficient_quota',
            'Allocated quota exceeded. For details, see: https://help.aliyun.com/zh/model-studio/error-code#token-limit',
          ),
        }),
      ).toMatchObject({ kind: 'rate_limited', retryable: true, status: 400 })
      // After a 200, as a compatible-mode data frame.
      expect(qwen.normalizeStreamError({ event: undefined, data: tokenLimitedBody })).toMatchObject(
        { kind: 'rate_limited', retryable: true, status: 200 },
      )
    })

    it('real arrears and quota codes stay permanent', () => {
      for (const status of [400, 403, 429]) {
        expect(
          qwen.normalizeError({
            status,
            body: native(
              'Arrearage',
              'Access denied, please make sure your account is in good standing.',
            ),
          }),
        ).toMatchObject({ kind: 'quota_exhausted', retryable: false })
        expect(
          qwen.normalizeError({
            status,
            body: compat(
              'Arrearage',
              'Access denied, please make sure your account is in good standing.',
            ),
          }),
        ).toMatchObject({ kind: 'quota_exhausted', retryable: false })
        expect(
          qwen.normalizeError({
            status,
            body: native(
              'AllocationQuota.FreeTierOnly',
              'The free tier of the model has been exhausted.',
            ),
          }),
        ).toMatchObject({ kind: 'quota_exhausted', retryable: false })
      }
      // The real compatible-mode reply for a spent free tier ("use free tier only"): 403.
      const freeTier = qwenErrors.freeTierExhausted()
      expect(
        qwen.normalizeError({ status: freeTier.status, body: JSON.stringify(freeTier.body) }),
      ).toMatchObject({
        kind: 'quota_exhausted',
        retryable: false,
        // Each model's free quota is its own: the key still serves the others.
        scope: 'model',
      })
      // Not a 429 and no token-limit link: what the code says.
      expect(
        qwen.normalizeError({
          status: 403,
          body: compat('insufficient_quota', 'You exceeded your current quota.'),
        }),
      ).toMatchObject({ kind: 'quota_exhausted', retryable: false })
    })

    it('OpenAI keeps its meaning of insufficient_quota on a 429: billing, permanent', () => {
      expect(dialects.openai.normalizeError({ status: 429, body: tokenLimitedBody })).toMatchObject(
        { kind: 'quota_exhausted', retryable: false },
      )
    })
  })

  // The compatible-mode reader built its verdict anew from OpenAI's: the
  // field a 400 names, a 429's "try again in" and a too-large request's
  // figures (and kind) were lost.
  it('compatible mode keeps what OpenAI’s reader finds: param, the message’s wait, a too-large request', () => {
    const body = (error: Record<string, unknown>) => JSON.stringify({ error, request_id: 'r-1' })
    expect(
      qwen.normalizeError({
        status: 400,
        body: body({
          message: 'Range of max_tokens should be [1, 8192]',
          type: 'invalid_request_error',
          param: 'max_tokens',
          code: 'invalid_parameter_error',
        }),
      }),
    ).toMatchObject({ kind: 'bad_request', param: 'max_tokens' })
    expect(
      qwen.normalizeError({
        status: 429,
        body: body({
          message: 'Requests rate limit exceeded, please try again in 20s.',
          type: 'limit_requests',
          code: 'limit_requests',
        }),
      }),
    ).toMatchObject({ kind: 'rate_limited', retryAfterMs: 20_000, limitedBy: 'requests' })
    expect(
      qwen.normalizeError({
        status: 429,
        body: body({
          message:
            'Request too large for qwen-plus on tokens per min (TPM): Limit 30000, Requested 50000.',
          type: 'tokens',
          code: 'rate_limit_exceeded',
        }),
      }),
    ).toMatchObject({
      kind: 'request_too_large',
      overLimit: { limit: 'TPM', limitTokens: 30000, requestedTokens: 50000 },
    })
  })
})
