import { doubaoErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import { useFakes, user } from '../call/support/fakes.js'
import { errorOver } from './support/errorOver.js'

const fakes = useFakes()
const doubao = dialects.doubao
const ark = (code: string, type: string, message: string) =>
  JSON.stringify({ error: { code, message: `${message} Request id: 0217xxxx`, param: '', type } })

describe('Doubao / Volcengine Ark errors', () => {
  it.each([
    [
      'RateLimitExceeded.EndpointRPMExceeded',
      'The Requests Per Minute (RPM) limit of the associated endpoint for your account has been exceeded.',
    ],
    [
      'RateLimitExceeded.EndpointTPMExceeded',
      'The Tokens Per Minute (TPM) limit of the associated endpoint for your account has been exceeded.',
    ],
  ])('%s is a retryable rate limit', async (code, message) => {
    expect(
      doubao.normalizeError(
        await errorOver(429, ark(code, 'TooManyRequests', message), { 'retry-after': '3' }),
      ),
    ).toMatchObject({
      kind: 'rate_limited',
      retryable: true,
      providerCode: code,
      retryAfterMs: 3000,
    })
  })

  it('ServerOverloaded on a 429 is overload, not a rate limit', () => {
    expect(
      doubao.normalizeError({
        status: 429,
        body: ark(
          'ServerOverloaded',
          'TooManyRequests',
          'The service is currently unable to handle additional requests due to server overload.',
        ),
      }),
    ).toMatchObject({ kind: 'overloaded', retryable: true })
  })

  it('AccountOverdueError is permanent', () => {
    expect(
      doubao.normalizeError({
        status: 403,
        body: ark(
          'AccountOverdueError',
          'Forbidden',
          'The request failed because your account has an overdue balance.',
        ),
      }),
    ).toMatchObject({ kind: 'quota_exhausted', retryable: false })
  })

  it('InvalidParameter is a bad request and SensitiveContentDetected a content refusal', () => {
    expect(
      doubao.normalizeError({
        status: 400,
        body: ark(
          'InvalidParameter',
          'BadRequest',
          'One or more parameters specified in the request are not valid.',
        ),
      }),
    ).toMatchObject({
      kind: 'bad_request',
      retryable: false,
    })
    expect(
      doubao.normalizeError({
        status: 400,
        body: ark(
          'SensitiveContentDetected.SevereViolation',
          'BadRequest',
          'The request failed because the input text may contain severe violation information.',
        ),
      }),
    ).toMatchObject({
      kind: 'content_policy',
      retryable: false,
      providerCode: 'SensitiveContentDetected.SevereViolation',
    })
  })

  // Ark's error-code table (volcengine.com/docs/82379/1299023): its filters
  // for every medium and direction, and the Volcengine risk-detection
  // product's verdicts — each a 400 that, read by its status, reached a
  // gateway's client as `invalid_request`, not as the content refusal it is.
  it.each([
    ['OutputImageSensitiveContentDetected', 'the output image may contain sensitive information.'],
    ['OutputVideoSensitiveContentDetected', 'the output video may contain sensitive information.'],
    [
      'InputVideoSensitiveContentDetected.PrivacyInformation',
      'the input video may contain real person.',
    ],
    [
      'InputImageSensitiveContentDetected.PrivacyInformation',
      'the input image may contain real person.',
    ],
    [
      'InputTextRiskDetection',
      'the input text includes sensitive content that violates ContentSecurityDetection.',
    ],
    [
      'InputImageRiskDetection',
      'the input image includes sensitive content that violates ContentSecurityDetection.',
    ],
    [
      'OutputTextRiskDetection',
      'the output text includes sensitive content that violates ContentSecurityDetection.',
    ],
    [
      'OutputImageRiskDetection',
      'the output image includes sensitive content that violates ContentSecurityDetection.',
    ],
  ])('400 %s is a content refusal, never retried', (code, message) => {
    expect(
      doubao.normalizeError({
        status: 400,
        body: ark(code, 'BadRequest', `The request failed because ${message}`),
      }),
    ).toMatchObject({ kind: 'content_policy', retryable: false, providerCode: code })
  })

  // "火山引擎风险识别产品请求失败": the risk-detection service itself failed
  // ("Internal error"). Nothing in the request is at fault: as the status's
  // bad_request the call failed with no retry and no fallback.
  it('400 ContentSecurityDetectionError (the filter service failed) is no bad request: a retryable server error', () => {
    expect(
      doubao.normalizeError({
        status: 400,
        body: ark(
          'ContentSecurityDetectionError',
          'BadRequest',
          'Internal error. ARK Request ID: 0217; CSDRequestId: x; CSD code: 500; CSD message: timeout.',
        ),
      }),
    ).toMatchObject({
      kind: 'server_error',
      retryable: true,
      providerCode: 'ContentSecurityDetectionError',
    })
  })

  it('an endpoint that does not exist is not_found', () => {
    expect(
      doubao.normalizeError({
        status: 404,
        body: ark(
          'InvalidEndpointOrModel.NotFound',
          'NotFound',
          'The model or endpoint ep-x does not exist or you do not have access to it.',
        ),
      }),
    ).toMatchObject({ kind: 'not_found', retryable: false })
  })

  // Ark's table: 400 `OutofContextError`, the encoded text and images over
  // the model's context window — no `InvalidParameter` prefix, so it was the
  // status's `bad_request`.
  it('400 OutofContextError (the prompt over the context window) is context_too_long', () => {
    expect(
      doubao.normalizeError({
        status: 400,
        body: JSON.stringify(doubaoErrors.outOfContext().body),
      }),
    ).toMatchObject({
      kind: 'context_too_long',
      retryable: false,
      providerCode: 'OutofContextError',
    })
  })

  it('400 OutofContextError through the fake runs the recovery step, and the smaller history is answered', async () => {
    const fake = await fakes.start({ dialect: 'doubao' })
    fake.enqueue(doubaoErrors.outOfContext(), reply.text('answered'))
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKey: 'ark-key',
        model: 'doubao-seed-1.6',
        dialect: 'doubao',
      }),
    )
    const steps: string[] = []
    const response = await callModel({
      models: [model],
      request: {
        messages: [user('old question'), { role: 'assistant', content: 'old answer' }, user('now')],
        maxTokens: 64,
      },
      recovery: {
        collapse: (messages) => {
          steps.push('collapse')
          return messages.slice(2)
        },
      },
    })
    // Before: RequestRejectedError (bad_request), no step run, one request sent.
    expect(response.text).toBe('answered')
    expect(steps).toEqual(['collapse'])
    expect(fake.requests.map((r) => (r.body as { messages: unknown[] }).messages.length)).toEqual([
      3, 1,
    ])
  })
})
