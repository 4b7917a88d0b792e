import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'

describe('Admission options that cannot mean what they say are refused, naming them', () => {
  // Accepted, Infinity kept every latency for good: the ring grew with every
  // answer, and neededMs stayed at the old 5000 ms after 500 answers in 100 ms.
  it.each([Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])(
    'new Admission({ latencySamples: %s }) is a RangeError',
    (samples) => {
      expect(() => new Admission({ latencySamples: samples })).toThrow(RangeError)
      expect(() => new Admission({ latencySamples: samples })).toThrow(
        /latencySamples must be a finite number of samples, got -?Infinity/,
      )
    },
  )

  // Accepted, it was replaced by 0.9 without a word: `95`, meant as p95, ran on p90.
  it.each([95, 0, -0.5, 1.01, Number.POSITIVE_INFINITY])(
    'new Admission({ latencyPercentile: %s }) is a RangeError',
    (percentile) => {
      expect(() => new Admission({ latencyPercentile: percentile })).toThrow(RangeError)
      expect(() => new Admission({ latencyPercentile: percentile })).toThrow(
        /latencyPercentile must be a fraction in \(0, 1\] \(0\.95 for p95\)/,
      )
    },
  )

  it('a percentile in (0, 1] is the one neededMs reads: 0.95 of the last 50 answers', async () => {
    const admission = new Admission({ clock: new ManualClock(), latencyPercentile: 0.95 })
    for (let i = 1; i <= 100; i++) {
      await admission.report('p', undefined, { ok: true, latencyMs: i * 10 })
    }
    // The last 50: 510…1000 ms; their p95 is the 48th, 980 ms (p90 would be 960).
    expect(admission.neededMs('p')).toBe(980)
  })

  it('a finite number of samples is a window of recent answers: older ones are forgotten', async () => {
    const admission = new Admission({ clock: new ManualClock(), latencySamples: 100 })
    for (let i = 0; i < 1000; i++) {
      await admission.report('p', undefined, { ok: true, latencyMs: 5000 })
    }
    for (let i = 0; i < 100; i++) {
      await admission.report('p', undefined, { ok: true, latencyMs: 100 })
    }
    expect(admission.neededMs('p')).toBe(100)
  })

  // Accepted, a caller that came while the probe was in flight was an
  // infinite wait away: refused, "no retry helps", as the provider recovered.
  it.each([Number.POSITIVE_INFINITY, 2 ** 31])(
    'new Admission({ staggerMs: %s }) is a RangeError',
    (staggerMs) => {
      expect(() => new Admission({ staggerMs })).toThrow(RangeError)
      expect(() => new Admission({ staggerMs })).toThrow(
        /staggerMs must be a number of ms up to 2147483647/,
      )
    },
  )

  it('a caller that comes while the probe is in flight waits to follow it', async () => {
    const clock = new ManualClock()
    const admission = new Admission({ clock, staggerMs: 100 })
    await admission.report('p', undefined, {
      ok: false,
      error: { kind: 'rate_limited', status: 429, retryAfterMs: 100 },
    })
    clock.advance(100)
    using deadline = Deadline.after(60_000, { clock })
    const probe = await admission.acquire({ provider: 'p', deadline })
    expect(probe.probe).toBe(true)
    const follower = admission.acquire({ provider: 'p', deadline })
    await probe.report({ ok: true, latencyMs: 50 })
    const permit = await follower
    expect(permit.probe).toBe(false)
  })
})
