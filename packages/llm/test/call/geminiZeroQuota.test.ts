import { ManualClock } from '@hourglass/core'
import { geminiErrors, type RecordedRequest, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { gemini } from '../../src/adapters/gemini.js'
import { Admission } from '../../src/admission/Admission.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isKeysRetired } from '../../src/errors/KeysRetiredError.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('hi')], maxTokens: 16 }

/**
 * Gemini's 429 `RESOURCE_EXHAUSTED` whose quota is 0 (`limit: 0`: the model
 * is not in the key's tier, a free key on a paid-only model) never refills,
 * whatever its `RetryInfo` says: like OpenAI's `insufficient_quota`, that
 * model is taken out on that key for good — no cooldown to probe again.
 */
describe('Gemini: a quota at zero (limit: 0)', () => {
  it('retires the model on that key: no request is sent to it again after RetryInfo’s wait, and the key’s other models still answer', async () => {
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    const perModel = (r: RecordedRequest) =>
      r.model === 'gemini-2.5-pro'
        ? geminiErrors.resourceExhausted({ limit: 0, model: 'gemini-2.5-pro', retryDelay: '34s' })
        : reply.text(`answered by ${r.model}`)
    const fake = await fakes.start({ dialect: 'gemini', reply: perModel })
    const pro = fakes.adapter(
      gemini({ baseURL: fake.baseURL, apiKey: 'AIza-1', model: 'gemini-2.5-pro' }),
    )
    const flash = fakes.adapter(
      gemini({ baseURL: fake.baseURL, apiKey: 'AIza-1', model: 'gemini-2.5-flash' }),
    )
    const records: AttemptRecord[] = []
    const answer = await callModel({
      models: [pro, flash],
      request,
      limits: { admission },
      onAttempt: (r) => records.push(r),
    })
    expect(answer.text).toBe('answered by gemini-2.5-flash')
    expect(records.map((r) => [r.model, r.errorKind, r.decision])).toEqual([
      ['gemini-2.5-pro', 'quota_exhausted', 'fallback'],
      ['gemini-2.5-flash', undefined, 'success'],
    ])
    // Well past RetryInfo's 34 s and admission's 60 s bound on any wait.
    for (const advanceMs of [35_000, 60_001, 3_600_000]) {
      clock.advance(advanceMs)
      const sent = fake.requests.length
      const refused = await callModel({ models: [pro], request, limits: { admission } })
        .then(() => undefined)
        .catch((e: unknown) => e)
      // Refused by admission with nothing sent: the quota is gone for good.
      expect(fake.requests).toHaveLength(sent)
      const retired = isModelUnavailable(refused) ? refused.lastCause : refused
      expect(isKeysRetired(retired) && [retired.reason, retired.model]).toEqual([
        'quota_exhausted',
        'gemini-2.5-pro',
      ])
      // The key itself is not retired: its other models go on.
      const other = await callModel({ models: [flash], request, limits: { admission } })
      expect(other.text).toBe('answered by gemini-2.5-flash')
    }
    expect(fake.requests.filter((r) => r.model === 'gemini-2.5-pro')).toHaveLength(1)
    expect(
      admission.forecast({
        provider: 'gemini',
        endpoint: fake.baseURL,
        keys: ['AIza-1'],
        model: 'gemini-2.5-pro',
      }).waitMs,
    ).toBe(Number.POSITIVE_INFINITY)
  })

  it('a zero quota that names no model (the project’s) retires the key, every model on it', async () => {
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    const perProject = geminiErrors.resourceExhausted({ limit: 0, retryDelay: '34s' })
    const failure = (perProject.body as { error: { details: Array<Record<string, unknown>> } })
      .error.details[0] as { violations: Array<Record<string, unknown>> }
    failure.violations = [
      {
        quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests',
        quotaId: 'GenerateRequestsPerMinutePerProject-FreeTier',
        quotaValue: '0',
      },
    ]
    const fake = await fakes.start({ dialect: 'gemini', reply: perProject })
    const pro = fakes.adapter(
      gemini({ baseURL: fake.baseURL, apiKey: 'AIza-1', model: 'gemini-2.5-pro' }),
    )
    const flash = fakes.adapter(
      gemini({ baseURL: fake.baseURL, apiKey: 'AIza-1', model: 'gemini-2.5-flash' }),
    )
    await callModel({ models: [pro], request, limits: { admission } }).catch(() => {})
    expect(fake.requests).toHaveLength(1)
    clock.advance(60_001)
    for (const model of [pro, flash]) {
      const refused = await callModel({ models: [model], request, limits: { admission } })
        .then(() => undefined)
        .catch((e: unknown) => e)
      const retired = isModelUnavailable(refused) ? refused.lastCause : refused
      expect(isKeysRetired(retired) && [retired.reason, retired.model]).toEqual([
        'quota_exhausted',
        undefined,
      ])
    }
    expect(fake.requests).toHaveLength(1)
  })
})
