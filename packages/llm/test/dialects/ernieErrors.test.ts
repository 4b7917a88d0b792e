import { Deadline, ManualClock } from '@hourglass/core'
import { ERNIE_V2_REFUSALS, ernieErrors, type RecordedRequest, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { classify, cooldownScopeOf } from '../../src/admission/slot.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import { isRequestRejected } from '../../src/errors/RequestRejectedError.js'
import { useFakes, user } from '../call/support/fakes.js'
import { errorOver } from './support/errorOver.js'

const fakes = useFakes()

const ernie = dialects.ernie
const v1 = (code: number, msg: string) =>
  JSON.stringify({ error_code: code, error_msg: msg, id: 'as-x' })

describe('Baidu ERNIE / Qianfan errors', () => {
  it.each([
    [336501, 'Rpm limit reached'],
    [336502, 'Tpm limit reached'],
    [18, 'Open api qps request limit reached'],
  ])('HTTP 200 with error_code %i is a retryable rate limit', async (code, msg) => {
    expect(ernie.normalizeError(await errorOver(200, v1(code, msg)))).toMatchObject({
      kind: 'rate_limited',
      retryable: true,
      status: 200,
      providerCode: String(code),
      message: msg,
    })
  })

  it('HTTP 200 with error_code 17 (daily limit) is permanent: quota_exhausted', () => {
    expect(
      ernie.normalizeError({ status: 200, body: v1(17, 'Open api daily request limit reached') }),
    ).toMatchObject({
      kind: 'quota_exhausted',
      retryable: false,
      providerCode: '17',
    })
  })

  // The codes of Baidu's own SDK (bce-qianfan-sdk `APIErrorCode`) that no
  // wait changes. Inside a 200, a code the table does not know reads as a
  // retryable server error: each of these was sent 3 times (~3.5 s of
  // backoff) and refused the same way each time.
  it.each([
    // This model only: the app's token still serves its other models, so the key is not retired.
    [336004, 'Permission error for accessing the model', 'not_found'],
    [336005, 'API name not exist', 'not_found'],
    [336104, 'Invalid argument: system', 'bad_request'],
    [336105, 'Invalid argument: user_id', 'bad_request'],
  ] as const)('HTTP 200 with error_code %i is not retried: %s is %s', (code, msg, kind) => {
    expect(ernie.normalizeError({ status: 200, body: v1(code, msg) })).toMatchObject({
      kind,
      retryable: false,
      status: 200,
      providerCode: String(code),
    })
  })

  // bce-qianfan-sdk names 336100 `ServerHighLoad` and retries it with the
  // QPS limit (`RetryErrCodes`): the provider's load, as code 2 is. Read as
  // an unexplained server error, each call retried it after a 1 s backoff
  // and nothing cooled: every call of the process kept sending to the
  // loaded provider instead of waiting out an overload or falling back.
  it('HTTP 200 with error_code 336100 (server high load) is an overload: retryable, and the provider cools', () => {
    const e = ernie.normalizeError({ status: 200, body: v1(336100, 'try again later') })
    expect(e).toMatchObject({
      kind: 'overloaded',
      retryable: true,
      status: 200,
      providerCode: '336100',
    })
    expect(e && classify({ ok: false, error: e })).toBe('cooldown')
    expect(e && cooldownScopeOf(e)).toBe('provider')
  })

  it('the `{"code":336501}` spelling is read too', () => {
    expect(
      ernie.normalizeError({
        status: 200,
        body: JSON.stringify({ code: 336501, message: 'Rpm limit reached' }),
      }),
    ).toMatchObject({
      kind: 'rate_limited',
      providerCode: '336501',
    })
  })

  it('Qianfan v2 (OpenAI-shaped) rpm/tpm codes on a 429 are rate limits', () => {
    const body = JSON.stringify({
      error: {
        code: 'tpm_rate_limit_exceeded',
        message: 'Tpm limit exceeded',
        type: 'rate_limit_exceeded',
      },
    })
    expect(ernie.normalizeError({ status: 429, body })).toMatchObject({
      kind: 'rate_limited',
      retryable: true,
      providerCode: 'tpm_rate_limit_exceeded',
    })
  })

  it('expired tokens and over-long input are permanent', () => {
    expect(
      ernie.normalizeError({ status: 200, body: v1(111, 'Access token expired') }),
    ).toMatchObject({ kind: 'auth', retryable: false })
    expect(
      ernie.normalizeError({ status: 200, body: v1(336103, 'the max input characters is 20000') }),
    ).toMatchObject({
      kind: 'context_too_long',
      retryable: false,
    })
  })

  it('a normal 200 answer is a success, and so is error_code 0', () => {
    expect(
      ernie.normalizeError({
        status: 200,
        body: JSON.stringify({ id: 'as-1', result: '你好', is_truncated: false }),
      }),
    ).toBeUndefined()
    expect(
      ernie.normalizeError({ status: 200, body: JSON.stringify({ error_code: 0, result: 'ok' }) }),
    ).toBeUndefined()
  })

  // Qianfan v2's error-code table: its content review answers `type:
  // unsafe_request` (403 for the system, user_setting and functions
  // fields, 400 for an image URL); the account's bill and a model taken
  // offline come as 403 `type: access_denied`. By status and type, each
  // was `auth`: the key retired, for every model it serves.
  it.each([
    ['system_unsafe', 'content_policy', false],
    ['user_setting_unsafe', 'content_policy', false],
    ['functions_unsafe', 'content_policy', false],
    ['image_url_unsafe', 'content_policy', false],
    ['account_overdue', 'quota_exhausted', false],
    ['model_offline', 'not_found', false],
  ] as const)('Qianfan v2 %s is %s, not auth', (code, kind, retryable) => {
    const { status, body } = ernieErrors.v2Refused(code)
    expect(status).toBe(ERNIE_V2_REFUSALS[code].status)
    const e = ernie.normalizeError({ status, body: JSON.stringify(body) })
    expect(e).toMatchObject({ kind, retryable, status, providerCode: code })
    // Only the overdue bill names a scope: it comes model by model.
    expect(e?.scope).toBe(code === 'account_overdue' ? 'model' : undefined)
  })

  it('Qianfan v2 403 account_overdue through the fake: that model is retired on the key, a fallback to another ERNIE model on it answers', async () => {
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    // As one v2 account answered: ernie-x1.1-preview refused as overdue, ernie-4.5-turbo-128k served.
    const byModel = (r: RecordedRequest) =>
      r.model === 'ernie-x1.1-preview'
        ? ernieErrors.v2Refused('account_overdue')
        : reply.text(`answered by ${r.model}`)
    const fake = await fakes.start({ dialect: 'ernie', reply: byModel })
    const onKey = (model: string) =>
      fakes.adapter(
        openAICompatible({ baseURL: fake.baseURL, apiKey: 'bce-v3-key', model, dialect: 'ernie' }),
      )
    const overdue = onKey('ernie-x1.1-preview')
    const other = onKey('ernie-4.5-turbo-128k')
    using deadline = Deadline.after(15_000, { clock })
    const call = () =>
      callModel({
        models: [overdue, other],
        request: { messages: [user('hi')], maxTokens: 16 },
        deadline,
        limits: { admission },
      })
    // Before: the key was retired, and the fallback on it refused unsent
    // ("every key of ernie is retired").
    expect((await call()).text).toBe('answered by ernie-4.5-turbo-128k')
    // The overdue model is not asked again; the other still is.
    expect((await call()).text).toBe('answered by ernie-4.5-turbo-128k')
    expect(fake.requests.map((r) => r.model)).toEqual([
      'ernie-x1.1-preview',
      'ernie-4.5-turbo-128k',
      'ernie-4.5-turbo-128k',
    ])
  })

  it('Qianfan v2 403 system_unsafe through the fake: refused as the request’s content, the key kept for the next call', async () => {
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    // Qianfan's review judges the content, whichever key sends it.
    const bySystem = (r: RecordedRequest) =>
      JSON.stringify(r.body).includes('forbidden persona')
        ? ernieErrors.v2Refused('system_unsafe')
        : reply.text('你好')
    const fake = await fakes.start({ dialect: 'ernie', reply: bySystem })
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKeys: ['ak-first-key', 'ak-second-key'],
        model: 'ernie-4.5-turbo-128k',
        dialect: 'ernie',
      }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const refused = await callModel({
      models: [model],
      request: {
        messages: [{ role: 'system', content: 'forbidden persona' }, user('hi')],
        maxTokens: 16,
      },
      deadline,
      limits: { admission },
    }).catch((e: unknown) => e)
    // Before: `auth` — both keys retired in turn, each refused the same way.
    expect(isRequestRejected(refused)).toBe(true)
    expect(refused).toMatchObject({ kind: 'content_policy' })
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['ak-first-key'])
    // The next client's call is answered on the same key.
    const answer = await callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 16 },
      deadline,
      limits: { admission },
    })
    expect(answer.text).toBe('你好')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['ak-first-key', 'ak-first-key'])
  })

  it('a data frame with error_code mid-stream is a stream error', () => {
    expect(
      ernie.normalizeStreamError({ event: undefined, data: v1(336501, 'Rpm limit reached') }),
    ).toMatchObject({
      kind: 'rate_limited',
      status: 200,
    })
  })
})
