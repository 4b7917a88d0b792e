import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import { errorOver } from './support/errorOver.js'

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
})
