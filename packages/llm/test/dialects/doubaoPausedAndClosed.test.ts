import { Deadline, ManualClock } from '@hourglass/core'
import { doubaoErrors, type RecordedRequest, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import { useFakes, user } from '../call/support/fakes.js'
import { drive, WaitClock } from '../support/waitClock.js'

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

  // Ark's error-code table gives 429 QuotaExceeded three meanings; read
  // whole as the key's spent quota, each retired the key.
  it('429 QuotaExceeded naming a model (its free trial spent) retires that model on the key; "The request has exceeded the quota" (too many queued tasks) is a rate limit', () => {
    const e = (body: unknown) => doubao.normalizeError({ status: 429, body: JSON.stringify(body) })
    expect(e(doubaoErrors.quotaExceeded('freeTrial', 'doubao-seed-1.6').body)).toMatchObject({
      kind: 'quota_exhausted',
      retryable: false,
      providerCode: 'QuotaExceeded',
      scope: 'model',
    })
    expect(e(doubaoErrors.quotaExceeded('queued').body)).toMatchObject({
      kind: 'rate_limited',
      retryable: true,
      providerCode: 'QuotaExceeded',
    })
    // Words that name no model and no reset stay the key's spent quota.
    const spent = e(JSON.parse(ark('QuotaExceeded', 'TooManyRequests', 'Quota exceeded.')))
    expect(spent).toMatchObject({ kind: 'quota_exhausted', retryable: false })
    expect(spent?.scope).toBeUndefined()
    expect(spent?.retryAfterMs).toBeUndefined()
  })

  it('429 QuotaExceeded or AccountQuotaExceeded for a plan’s 5-hour quota waits until the reset it names, the key’s: not retired, not retried as a rate limit', () => {
    const nowMs = Date.parse('2026-12-06T22:00:00+08:00')
    for (const code of ['QuotaExceeded', 'AccountQuotaExceeded']) {
      const plan = doubao.normalizeError({
        status: 429,
        nowMs,
        body: ark(
          code,
          'TooManyRequests',
          'You have exceeded the 5-hour usage quota. It will reset at 2026-12-06 23:30:00 +0800 CST. We recommend upgrading your plan for more quota, or waiting for the reset.',
        ),
      })
      expect(plan).toMatchObject({
        kind: 'quota_exhausted',
        retryable: false,
        providerCode: code,
        retryAfterMs: 90 * 60_000,
      })
      expect(plan?.scope).toBeUndefined()
    }
  })

  it('a plan’s reset written as Go prints a time, with a fraction of a second, is read (rounded up)', () => {
    const nowMs = Date.parse('2026-12-06T22:00:00+08:00')
    for (const code of ['QuotaExceeded', 'AccountQuotaExceeded']) {
      const plan = doubao.normalizeError({
        status: 429,
        nowMs,
        body: ark(
          code,
          'TooManyRequests',
          'You have exceeded the 5-hour usage quota. It will reset at 2026-12-06 23:30:00.123456789 +0800 CST.',
        ),
      })
      // Unread, `QuotaExceeded` retired the key and `AccountQuotaExceeded` was retried as a rate.
      expect(plan).toMatchObject({
        kind: 'quota_exhausted',
        retryable: false,
        retryAfterMs: 90 * 60_000 + 124,
      })
    }
  })

  it('a plan’s reset already past (a skewed clock, a quota that did not reset) cools the key a minute, not a second', () => {
    const nowMs = Date.parse('2026-12-06T22:00:00+08:00')
    for (const reset of ['2026-12-06 21:50:00 +0800 CST', '2026-12-06 22:00:00 +0800 CST']) {
      const plan = doubao.normalizeError({
        status: 429,
        nowMs,
        body: ark(
          'QuotaExceeded',
          'TooManyRequests',
          `You have exceeded the 5-hour usage quota. It will reset at ${reset}.`,
        ),
      })
      expect(plan).toMatchObject({ kind: 'quota_exhausted', retryAfterMs: 60_000 })
      expect(plan?.scope).toBeUndefined()
    }
  })

  it('a plan’s quota refused past its reset through the fake: the key is asked again once a minute, not every second', async () => {
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    // In Beijing time, as Ark writes it: ten minutes ago.
    const beijing = new Date(Date.now() - 10 * 60_000 + 8 * 3_600_000).toISOString()
    const resetAt = `${beijing.slice(0, 10)} ${beijing.slice(11, 19)} +0800 CST`
    const fake = await fakes.start({
      dialect: 'doubao',
      reply: () => ({
        kind: 'error',
        status: 429,
        body: JSON.parse(
          ark(
            'QuotaExceeded',
            'TooManyRequests',
            `You have exceeded the 5-hour usage quota. It will reset at ${resetAt}.`,
          ),
        ),
        headers: {},
      }),
    })
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKey: 'ark-plan-key',
        model: 'doubao-seed-1.6',
        dialect: 'doubao',
      }),
    )
    // A call a second for a minute, each unwilling to wait (the clock is the test's).
    for (let i = 0; i <= 60; i++) {
      using deadline = Deadline.after(500, { clock })
      const refused = await callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 16 },
        deadline,
        limits: { admission },
      }).catch((e: unknown) => e)
      // Sent and refused (ModelUnavailableError), or held back unsent (RateLimitedError).
      expect(refused).toBeInstanceOf(Error)
      clock.advance(1_000)
    }
    // Before: 61 requests (a 1 s wait each time). Now the first, and one probe when the minute is up.
    expect(fake.requests.length).toBe(2)
  })

  it('a plan’s spent 5-hour quota through the fake: the key cools until the reset and then answers again, never retired', async () => {
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    // In Beijing time, as Ark writes it: five hours from now.
    const beijing = new Date(Date.now() + 5 * 3_600_000 + 8 * 3_600_000).toISOString()
    const resetAt = `${beijing.slice(0, 10)} ${beijing.slice(11, 19)} +0800 CST`
    const fake = await fakes.start({ dialect: 'doubao', reply: reply.text('answered') })
    fake.enqueue({
      kind: 'error',
      status: 429,
      body: JSON.parse(
        ark(
          'QuotaExceeded',
          'TooManyRequests',
          `You have exceeded the 5-hour usage quota. It will reset at ${resetAt}.`,
        ),
      ),
      headers: {},
    })
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKey: 'ark-plan-key',
        model: 'doubao-seed-1.6',
        dialect: 'doubao',
      }),
    )
    const call = () => {
      using deadline = Deadline.after(15_000, { clock })
      return callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 16 },
        deadline,
        limits: { admission },
      })
    }
    const refused = await call().catch((e: unknown) => e)
    expect(refused).toMatchObject({ name: 'ModelUnavailableError' })
    // The wait is capped (`maxRetryAfterMs`, a minute by default): then one
    // probe asks again. Retired, the key refused it unsent (KeysRetiredError).
    clock.advance(60_000)
    const again = await call().catch((e: unknown) => e)
    expect(String(again)).not.toContain('retired')
    expect((again as { text?: string }).text).toBe('answered')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['ark-plan-key', 'ark-plan-key'])
  })

  it('429 QuotaExceeded through the fake: a model’s spent free trial leaves the key’s other models answering, and a full queue is waited out on the same key', async () => {
    const clock = new WaitClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    // doubao-seed-1.6's free trial is spent; the first request to doubao-1.5-pro-32k meets a full queue.
    let queued = 1
    const byModel = (r: RecordedRequest) =>
      r.model === 'doubao-seed-1.6'
        ? doubaoErrors.quotaExceeded('freeTrial', 'doubao-seed-1.6')
        : queued-- > 0
          ? doubaoErrors.quotaExceeded('queued')
          : reply.text(`answered by ${r.model}`)
    const fake = await fakes.start({ dialect: 'doubao', reply: byModel })
    const onKey = (model: string) =>
      fakes.adapter(
        openAICompatible({ baseURL: fake.baseURL, apiKey: 'ark-key', model, dialect: 'doubao' }),
      )
    const spent = onKey('doubao-seed-1.6')
    const other = onKey('doubao-1.5-pro-32k')
    using deadline = Deadline.after(15_000, { clock })
    const call = async () => {
      const [settled] = await drive(clock, [
        callModel({
          models: [spent, other],
          request: { messages: [user('hi')], maxTokens: 16 },
          deadline,
          limits: { admission },
        }),
      ])
      if (settled?.status !== 'fulfilled') throw settled?.reason
      return settled.value
    }
    // Before: the free trial retired the key, and the fallback on it was
    // refused unsent ("every key of doubao is retired"); so did the full
    // queue, had the fallback been sent.
    expect((await call()).text).toBe('answered by doubao-1.5-pro-32k')
    // The spent model is not asked again; the other still is.
    expect((await call()).text).toBe('answered by doubao-1.5-pro-32k')
    expect(fake.requests.map((r) => r.model)).toEqual([
      'doubao-seed-1.6',
      'doubao-1.5-pro-32k',
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
