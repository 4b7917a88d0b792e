import { Deadline, ManualClock } from '@hourglass/core'
import { doubaoErrors, type RecordedRequest, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import { useFakes, user } from '../call/support/fakes.js'

const fakes = useFakes()

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
      // That model's limit: the key still serves the others.
      scope: 'model',
    })
  })

  it('429 SetLimitExceeded through the fake: the paused model is retired on the key, its other models still answer', async () => {
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    // The account's limit for doubao-seed-1.6 is reached; the key's other models answer.
    const byModel = (r: RecordedRequest) =>
      r.model === 'doubao-seed-1.6'
        ? doubaoErrors.setLimitExceeded('doubao-seed-1.6')
        : reply.text(`answered by ${r.model}`)
    const fake = await fakes.start({ dialect: 'doubao', reply: byModel })
    const onKey = (model: string) =>
      fakes.adapter(
        openAICompatible({ baseURL: fake.baseURL, apiKey: 'ark-key', model, dialect: 'doubao' }),
      )
    const paused = onKey('doubao-seed-1.6')
    const other = onKey('doubao-1.5-pro-32k')
    using deadline = Deadline.after(15_000, { clock })
    const call = () =>
      callModel({
        models: [paused, other],
        request: { messages: [user('hi')], maxTokens: 16 },
        deadline,
        limits: { admission },
      })
    // Before: the key was retired, and the fallback on it refused unsent.
    expect((await call()).text).toBe('answered by doubao-1.5-pro-32k')
    // The paused model is not asked again; the other still is.
    expect((await call()).text).toBe('answered by doubao-1.5-pro-32k')
    expect(fake.requests.map((r) => r.model)).toEqual([
      'doubao-seed-1.6',
      'doubao-1.5-pro-32k',
      'doubao-1.5-pro-32k',
    ])
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
