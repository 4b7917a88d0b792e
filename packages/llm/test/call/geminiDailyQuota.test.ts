import { Deadline, ManualClock } from '@hourglass/core'
import { type ErrorReply, type RecordedRequest, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { gemini } from '../../src/adapters/gemini.js'
import { Admission } from '../../src/admission/Admission.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { llmChannels } from '../../src/channels.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('hi')], maxTokens: 16 }

/**
 * Gemini's 429 for a spent per-day quota: the same RESOURCE_EXHAUSTED as a
 * per-minute limit, told apart only by the violation's `quotaId`, and with a
 * RetryInfo that says nothing about the daily reset.
 */
function perDayQuota(model: string, retryDelay?: string): ErrorReply {
  const details: unknown[] = [
    {
      '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
      violations: [
        {
          quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests',
          quotaId: 'GenerateRequestsPerDayPerProjectPerModel-FreeTier',
          quotaDimensions: { location: 'global', model },
          quotaValue: '50',
        },
      ],
    },
  ]
  if (retryDelay !== undefined) {
    details.push({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay })
  }
  return {
    kind: 'error',
    status: 429,
    body: {
      error: {
        code: 429,
        message: `You exceeded your current quota, please check your plan and billing details.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 50, model: ${model}`,
        status: 'RESOURCE_EXHAUSTED',
        details,
      },
    },
    headers: {},
  }
}

describe('Gemini: a spent per-day quota', () => {
  it('is not retried on the same model after RetryInfo’s short wait', async () => {
    const fake = await fakes.start({ dialect: 'gemini' })
    fake.enqueue(perDayQuota('gemini-2.5-pro', '0.01s'), reply.text('too late'))
    const model = fakes.adapter(
      gemini({ baseURL: fake.baseURL, apiKey: 'AIza-1', model: 'gemini-2.5-pro' }),
    )
    const records: AttemptRecord[] = []
    const failure = await callModel({ models: [model], request, onAttempt: (r) => records.push(r) })
      .then(() => undefined)
      .catch((e: unknown) => e)
    expect(failure).toBeInstanceOf(Error)
    expect(records.map((r) => [r.errorKind, r.decision])).toEqual([['quota_exhausted', 'fail']])
    expect(fake.requests).toHaveLength(1)
  })

  it('falls back to the next model at once; the key’s other models stay free, the spent model cools', async () => {
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    const perModel = (r: RecordedRequest) =>
      r.model === 'gemini-2.5-pro'
        ? perDayQuota('gemini-2.5-pro')
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
    expect(clock.now()).toBe(1_000)
    expect(records.map((r) => [r.model, r.errorKind, r.decision])).toEqual([
      ['gemini-2.5-pro', 'quota_exhausted', 'fallback'],
      ['gemini-2.5-flash', undefined, 'success'],
    ])
    // The key is not retired: flash on it still answers, however often.
    for (let i = 0; i < 2; i++) {
      const again = await callModel({ models: [flash], request, limits: { admission } })
      expect(again.text).toBe('answered by gemini-2.5-flash')
    }
    // pro itself is held back on the key: refused with nothing sent…
    const sent = fake.requests.length
    using deadline = Deadline.after(15_000, { clock })
    const refused = await callModel({ models: [pro], request, deadline, limits: { admission } })
      .then(() => undefined)
      .catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(Error)
    expect(fake.requests).toHaveLength(sent)
    // …for admission's bound (maxRetryAfterMs, 60 s by default), then probed again.
    clock.advance(60_001)
    await callModel({ models: [pro, flash], request, limits: { admission } })
    expect(fake.requests.slice(sent).map((r) => r.model)).toEqual([
      'gemini-2.5-pro',
      'gemini-2.5-flash',
    ])
  })
})

// Review: waiting RetryInfo's 17 s, every later call was held those seconds
// and then sent to the spent model again (4 calls 17 s apart: 4 requests),
// and the cooldown said "server hint of 86400000 ms" for a day the server
// never named.
describe('Gemini: a spent per-day quota with RetryInfo 17s', () => {
  it('is not asked again 17 s later, and the cooldown says it is a per-day quota, not a server hint', async () => {
    const clock = new ManualClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    const fake = await fakes.start({
      dialect: 'gemini',
      reply: perDayQuota('gemini-2.5-pro', '17s'),
    })
    const pro = fakes.adapter(
      gemini({ baseURL: fake.baseURL, apiKey: 'AIza-1', model: 'gemini-2.5-pro' }),
    )
    const reasons: string[] = []
    const onCooldown = (m: unknown) => reasons.push((m as { reason: string }).reason)
    llmChannels.cooldown.subscribe(onCooldown)
    try {
      for (let i = 0; i < 3; i++) {
        using deadline = Deadline.after(5_000, { clock })
        await callModel({ models: [pro], request, deadline, limits: { admission } }).catch(
          () => undefined,
        )
        clock.advance(17_001)
      }
    } finally {
      llmChannels.cooldown.unsubscribe(onCooldown)
    }
    expect(fake.requests).toHaveLength(1)
    expect(reasons[0]).toMatch(/per-day quota: until its reset, capped at maxRetryAfterMs/)
    expect(reasons.join(' | ')).not.toMatch(/server hint/)
  })
})
