import { describe, expect, it } from 'vitest'
import { msUntilQuotaDay } from '../../src/dialects/classifyError.js'
import { dialects } from '../../src/dialects/dialects.js'

const gemini = dialects.gemini

function exhausted(
  quotaIds: string[],
  retryDelay?: string,
  model = 'gemini-2.5-pro',
  nowMs?: number,
) {
  const details: unknown[] = [
    {
      '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
      violations: quotaIds.map((quotaId) => ({
        quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests',
        quotaId,
        quotaDimensions: quotaId.includes('PerModel') ? { location: 'global', model } : {},
        quotaValue: '50',
      })),
    },
  ]
  if (retryDelay !== undefined) {
    details.push({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay })
  }
  const body = JSON.stringify({
    error: {
      code: 429,
      message: 'You exceeded your current quota.',
      status: 'RESOURCE_EXHAUSTED',
      details,
    },
  })
  return gemini.normalizeError({ status: 429, body, nowMs })
}

describe('Gemini per-day quotas', () => {
  // The caller's clock, as for header dates: the wait read the system clock
  // whatever `nowMs` said (a test's or a replay's).
  it('counts the wait until the reset from the caller’s nowMs', () => {
    // 07:00 UTC on 15 January is 23:00 in Mountain View (PST): an hour left.
    const nowMs = Date.UTC(2026, 0, 15, 7, 0, 0)
    expect(
      exhausted(['GenerateRequestsPerDayPerProjectPerModel-FreeTier'], '21s', undefined, nowMs)
        ?.retryAfterMs,
    ).toBe(3_600_000)
  })

  // Review: waiting RetryInfo's seconds, every later call sent to the spent
  // model again each time they were over. The wait is the day, marked as ours.
  it('a per-day per-model quota is quota_exhausted, scoped to the model, waiting until the reset, not RetryInfo', () => {
    expect(exhausted(['GenerateRequestsPerDayPerProjectPerModel-FreeTier'], '21s')).toMatchObject({
      kind: 'quota_exhausted',
      retryable: false,
      scope: 'model',
      retryAfterMs: untilReset(),
      quotaWindow: 'day',
    })
  })

  it('without RetryInfo, the wait is until the reset, never none (which retires the key)', () => {
    expect(exhausted(['GenerateRequestsPerDayPerProjectPerModel-FreeTier'])).toMatchObject({
      kind: 'quota_exhausted',
      scope: 'model',
      retryAfterMs: untilReset(),
    })
  })

  it('a per-day quota of the project, naming no model, holds back the key', () => {
    expect(exhausted(['GenerateRequestsPerDayPerProject'], '5s')).toMatchObject({
      kind: 'quota_exhausted',
      scope: 'key',
      retryAfterMs: untilReset(),
    })
  })

  it('a per-minute quota stays a rate limit; beside a per-day one, the day wins', () => {
    const perMinute = 'GenerateRequestsPerMinutePerProjectPerModel-FreeTier'
    expect(exhausted([perMinute], '3s')).toMatchObject({ kind: 'rate_limited', retryable: true })
    expect(
      exhausted([perMinute, 'GenerateRequestsPerDayPerProjectPerModel-FreeTier'], '3s'),
    ).toMatchObject({ kind: 'quota_exhausted', scope: 'model', retryAfterMs: untilReset() })
  })
})

/** The wait the dialect gives now, within the second the test takes. */
function untilReset(): unknown {
  return expect.closeTo(msUntilQuotaDay(Date.now()), -4)
}

// Review: a flat day overshot the reset (midnight Pacific time) by up to
// 24 h for anyone whose maxRetryAfterMs lets a cooldown run that long.
describe('msUntilQuotaDay: the wait until midnight Pacific time', () => {
  it.each([
    ['2026-12-03T08:00:00Z', 24 * 3600_000], // midnight PST: a whole day
    ['2026-12-03T02:10:00Z', (5 * 3600 + 50 * 60) * 1000], // 18:10 PST
    ['2026-07-01T07:00:00Z', 24 * 3600_000], // midnight PDT
    ['2026-12-03T07:59:59.500Z', 1000], // at least a second
  ])('%s: %d ms', (iso, ms) => {
    expect(msUntilQuotaDay(Date.parse(iso))).toBe(ms)
  })
})
