import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'

const doubao = dialects.doubao
const ark = (code: string, type: string, message: string) =>
  JSON.stringify({ error: { code, message: `${message} Request id: 0217xxxx`, param: '', type } })

describe('Doubao / Volcengine Ark: refusals of the account or endpoint, not of the request', () => {
  it('429 SetLimitExceeded (the model paused at the account’s own inference limit) is a spent quota, not a rate limit retried', () => {
    const e = doubao.normalizeError({
      status: 429,
      body: ark(
        'SetLimitExceeded',
        'TooManyRequests',
        'Your account 2100000000 has reached the set inference limit for the doubao-seed-1.6 model, and the model service has been paused. To continue using this model, please visit the Model Activation page to adjust or close the "Safe Experience Mode".',
      ),
    })
    expect(e).toMatchObject({
      kind: 'quota_exhausted',
      retryable: false,
      providerCode: 'SetLimitExceeded',
    })
  })

  it('400 InvalidEndpoint.ClosedEndpoint (closed or temporarily unavailable, "try again later") is no bad request', () => {
    const e = doubao.normalizeError({
      status: 400,
      body: ark(
        'InvalidEndpoint.ClosedEndpoint',
        'BadRequest',
        'The request targeted an endpoint that is currently closed or temporarily unavailable.',
      ),
    })
    expect(e).toMatchObject({
      kind: 'server_error',
      retryable: true,
      providerCode: 'InvalidEndpoint.ClosedEndpoint',
    })
  })

  it('400 InvalidParameter stays a bad request', () => {
    const e = doubao.normalizeError({
      status: 400,
      body: ark(
        'InvalidParameter',
        'BadRequest',
        'One or more parameters specified in the request are not valid.',
      ),
    })
    expect(e).toMatchObject({ kind: 'bad_request', retryable: false })
  })
})
