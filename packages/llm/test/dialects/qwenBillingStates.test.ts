import { Deadline, ManualClock } from '@hourglass/core'
import { qwenErrors, type RecordedRequest, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import { useFakes, user } from '../call/support/fakes.js'

const fakes = useFakes()

const qwen = dialects.qwen

// Model Studio's error-code page lists these three as 429s: the workspace's
// billing state ("The prepaid bill is overdue."), which no wait lifts.
const native = (code: string, message: string) =>
  JSON.stringify({ code, message, request_id: '6f3c8a7e-0000-0000-0000-000000000000' })
const compatible = (code: string, message: string) =>
  JSON.stringify({ error: { message, type: code, param: null, code }, request_id: 'x' })

describe('Qwen / DashScope: 429s that are the bill, not a rate', () => {
  it.each([
    ['CommodityNotPurchased', 'Commodity has not purchased yet.'],
    ['PrepaidBillOverdue', 'The prepaid bill is overdue.'],
    ['PostpaidBillOverdue', 'The postpaid bill is overdue.'],
  ])(
    '429 %s is quota_exhausted, not retried as a rate limit (native and compatible mode)',
    (code, message) => {
      for (const body of [native(code, message), compatible(code, message)]) {
        expect(qwen.normalizeError({ status: 429, body })).toMatchObject({
          kind: 'quota_exhausted',
          retryable: false,
          providerCode: code,
        })
      }
    },
  )

  it('429 Throttling.RateQuota stays a retryable rate limit', () => {
    expect(
      qwen.normalizeError({
        status: 429,
        body: native(
          'Throttling.RateQuota',
          'Requests rate limit exceeded, please try again later.',
        ),
      }),
    ).toMatchObject({ kind: 'rate_limited', retryable: true })
  })

  it('403 AllocationQuota.FreeTierOnly through the fake: that model is retired on the key, the key’s other models still answer', async () => {
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    // "Free Quota Only" is on and qwen-max's free quota is spent; qwen-plus has some left.
    const byModel = (r: RecordedRequest) =>
      r.model === 'qwen-max' ? qwenErrors.freeTierExhausted() : reply.text(`answered by ${r.model}`)
    const fake = await fakes.start({ dialect: 'qwen', reply: byModel })
    const onKey = (model: string) =>
      fakes.adapter(
        openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-dashscope', model, dialect: 'qwen' }),
      )
    const spent = onKey('qwen-max')
    const other = onKey('qwen-plus')
    using deadline = Deadline.after(15_000, { clock })
    const call = () =>
      callModel({
        models: [spent, other],
        request: { messages: [user('hi')], maxTokens: 16 },
        deadline,
        limits: { admission },
      })
    // Before: the key was retired, and the fallback on it refused unsent.
    expect((await call()).text).toBe('answered by qwen-plus')
    // The spent model is not asked again; the other still is.
    expect((await call()).text).toBe('answered by qwen-plus')
    expect(fake.requests.map((r) => r.model)).toEqual(['qwen-max', 'qwen-plus', 'qwen-plus'])
  })
})

describe('Qwen / DashScope: 403s that refuse one model, not the key', () => {
  // Model Studio's status codes: `AccessDenied` is "no access to this API,
  // e.g. not in its invitation-only test", `AccessDenied.Unpurchased` the
  // model not purchased — one model refused to this account, the key good
  // for its others (a bad key is a 401 InvalidApiKey). As the key's `auth`
  // each retired the key for every model; as `not_found` the provider's
  // other key (another account) was never tried.
  it.each([
    [
      'AccessDenied.Unpurchased',
      'Access to model denied. Please make sure you are eligible for using the model.',
    ],
    ['AccessDenied', 'Access denied.'],
    ['access_denied', 'Access denied.'],
    // The key's sub-workspace not granted this model: it still calls those it was.
    ['Model.AccessDenied', 'Model access denied.'],
  ])(
    '403 %s refuses this model on this key: auth, scope model (native and compatible mode)',
    (code, message) => {
      for (const body of [native(code, message), compatible(code, message)]) {
        expect(qwen.normalizeError({ status: 403, body })).toMatchObject({
          kind: 'auth',
          retryable: false,
          providerCode: code,
          scope: 'model',
        })
      }
    },
  )

  it.each(['AccessDenied.Unpurchased', 'Model.AccessDenied'] as const)(
    '403 %s through the fake: a fallback to another Qwen model on the same key answers, call after call',
    async (code) => {
      const clock = new ManualClock(1_000)
      const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
      // The account has not bought qwen3-max (or the key's sub-workspace was
      // not granted it); qwen-plus it may call.
      const byModel = (r: RecordedRequest) =>
        r.model === 'qwen3-max'
          ? qwenErrors.modelAccessDenied(code)
          : reply.text(`answered by ${r.model}`)
      const fake = await fakes.start({ dialect: 'qwen', reply: byModel })
      const onKey = (model: string) =>
        fakes.adapter(
          openAICompatible({
            baseURL: fake.baseURL,
            apiKey: 'sk-dashscope',
            model,
            dialect: 'qwen',
          }),
        )
      const unpurchased = onKey('qwen3-max')
      const other = onKey('qwen-plus')
      using deadline = Deadline.after(15_000, { clock })
      const call = () =>
        callModel({
          models: [unpurchased, other],
          request: { messages: [user('hi')], maxTokens: 16 },
          deadline,
          limits: { admission },
        })
      // Before: `auth` — the key was retired, and the fallback on it refused
      // unsent ("every key of qwen is retired"), this call and every later one.
      expect((await call()).text).toBe('answered by qwen-plus')
      // qwen3-max is retired on the key: not asked again; qwen-plus still is.
      expect((await call()).text).toBe('answered by qwen-plus')
      expect(fake.requests.map((r) => [r.model, r.apiKey])).toEqual([
        ['qwen3-max', 'sk-dashscope'],
        ['qwen-plus', 'sk-dashscope'],
        ['qwen-plus', 'sk-dashscope'],
      ])
    },
  )

  it('403 AccessDenied.Unpurchased on one account of two: the model is answered with the other key, call after call', async () => {
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    // Account A has not bought qwen3-max; account B has.
    const byKey = (r: RecordedRequest) =>
      r.apiKey === 'sk-account-a'
        ? qwenErrors.modelAccessDenied()
        : reply.text(`answered with ${r.apiKey}`)
    const fake = await fakes.start({ dialect: 'qwen', reply: byKey })
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKeys: ['sk-account-a', 'sk-account-b'],
        model: 'qwen3-max',
        dialect: 'qwen',
      }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const answers: string[] = []
    for (let i = 0; i < 6; i++) {
      const answer = await callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 16 },
        deadline,
        limits: { admission },
      }).then(
        (a) => a.text,
        (e: unknown) => String(e),
      )
      answers.push(answer)
    }
    // Before (`not_found`, no key's): 6 of 6 failed, every request to A, B never sent.
    expect(answers).toEqual(Array(6).fill('answered with sk-account-b'))
    // A is asked once for qwen3-max, then retired for it.
    expect(fake.requests.map((r) => r.apiKey)).toEqual([
      'sk-account-a',
      ...Array(6).fill('sk-account-b'),
    ])
  })
})
