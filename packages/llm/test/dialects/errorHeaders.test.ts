import { MAX_TIMER_MS } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { retryAfterFromHeaders, shouldRetryHeader } from '../../src/dialects/errorHeaders.js'

const nowMs = Date.parse('2025-06-01T12:00:00Z')
const hint = (headers: Record<string, string>, useResetHeaders = true) =>
  retryAfterFromHeaders(new Headers(headers), { nowMs, useResetHeaders })

describe('shared retry hints', () => {
  it('retry-after-ms is preferred to Retry-After', () => {
    expect(hint({ 'retry-after-ms': '1500.5', 'retry-after': '9' })).toBe(1501)
  })

  it('Retry-After is read as seconds or as an HTTP-date', () => {
    expect(hint({ 'retry-after': '2' })).toBe(2000)
    expect(hint({ 'retry-after': 'Sun, 01 Jun 2025 12:00:30 GMT' })).toBe(30_000)
    expect(hint({ 'retry-after': 'Sun, 01 Jun 2025 11:00:00 GMT' })).toBe(0)
  })

  it('Go-style reset durations are read ("1s", "6m0s", "1m30.5s", "20ms")', () => {
    expect(hint({ 'x-ratelimit-reset-requests': '1s' })).toBe(1000)
    expect(hint({ 'x-ratelimit-reset-requests': '6m0s' })).toBe(360_000)
    expect(hint({ 'x-ratelimit-reset-requests': '1m30.5s' })).toBe(90_500)
    expect(hint({ 'x-ratelimit-reset-requests': '20ms' })).toBe(20)
  })

  it('without remaining counts the shortest reset is used; reset headers are ignored when not asked for', () => {
    expect(hint({ 'x-ratelimit-reset-requests': '2s', 'x-ratelimit-reset-tokens': '6m0s' })).toBe(
      2000,
    )
    expect(hint({ 'x-ratelimit-reset-requests': '2s' }, false)).toBeUndefined()
  })

  it('garbage and absurd values mean no hint or the largest timer, never NaN or a throw', () => {
    expect(hint({ 'retry-after': 'soon' })).toBeUndefined()
    expect(hint({ 'retry-after': '-5' })).toBeUndefined()
    expect(hint({ 'retry-after-ms': 'NaN' })).toBeUndefined()
    expect(hint({ 'retry-after': '99999999999' })).toBe(MAX_TIMER_MS)
    expect(hint({ 'x-ratelimit-reset-requests': '1x' })).toBeUndefined()
  })

  // However many digits: one too large for a double read as no hint at all,
  // and the call retried at its own backoff a provider that had asked it to
  // stay away (beyond maxRetryAfterMs it is given up on instead).
  it('a well-formed hint too large for a double is the largest timer, not no hint', () => {
    const huge = '9'.repeat(400)
    expect(hint({ 'retry-after': huge })).toBe(MAX_TIMER_MS)
    expect(hint({ 'retry-after-ms': huge })).toBe(MAX_TIMER_MS)
    expect(
      hint({ 'x-ratelimit-reset-requests': huge, 'x-ratelimit-remaining-requests': '0' }),
    ).toBe(MAX_TIMER_MS)
    expect(hint({ 'retry-after': '1e308' })).toBeUndefined() // not delay-seconds (RFC 9110 §10.2.3)
  })

  // Read by core's retryAfterMs, as @hourglass/fetch reads it. Date.parse
  // took "-0000005" for a date in 2001 (0 ms: a retry at once) and an
  // asctime date for the host's local time (five hours in New York); "5, 5"
  // was no hint.
  it('Retry-After is read as fetch reads it: no negative dates, the first of a joined list, asctime in GMT', () => {
    expect(hint({ 'retry-after': '-0000005' })).toBeUndefined()
    expect(hint({ 'retry-after': '5, 5' })).toBe(5000)
    expect(hint({ 'retry-after': '1.5' })).toBe(1500) // as fetch, undici and the openai client read it
    const zone = process.env.TZ
    process.env.TZ = 'America/New_York'
    try {
      expect(hint({ 'retry-after': 'Sun Jun  1 12:00:03 2025' })).toBe(3000)
    } finally {
      if (zone === undefined) delete process.env.TZ
      else process.env.TZ = zone
    }
  })

  it('reset times are RFC 3339 with an offset: one without is no hint, not the host zone', () => {
    const reset = (at: string) =>
      hint({
        'anthropic-ratelimit-requests-reset': at,
        'anthropic-ratelimit-requests-remaining': '0',
      })
    expect(reset('2025-06-01T12:00:05Z')).toBe(5000)
    expect(reset('2025-06-01T14:00:05.5+02:00')).toBe(5500)
    expect(reset('2025-06-01T12:00:05')).toBeUndefined()
    expect(reset('Sun, 01 Jun 2025 12:00:07 GMT')).toBe(7000)
    expect(reset('12')).toBe(12_000)
  })

  it('x-should-retry is read from Headers or a plain record, any case, and only true/false count', () => {
    expect(shouldRetryHeader(new Headers({ 'x-should-retry': 'false' }))).toBe(false)
    expect(shouldRetryHeader({ 'X-Should-Retry': 'TRUE' })).toBe(true)
    expect(shouldRetryHeader({ 'x-should-retry': ['true'] })).toBe(true)
    expect(shouldRetryHeader({ 'x-should-retry': 'maybe' })).toBeUndefined()
    expect(shouldRetryHeader(undefined)).toBeUndefined()
  })
})
