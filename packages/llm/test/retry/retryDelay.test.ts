import { describe, expect, it } from 'vitest'
import { backoffMs, retryDelay } from '../../src/retry/retryDelay.js'
import type { NormalizedError } from '../../src/types.js'

const rateLimited = (retryAfterMs?: number): Pick<NormalizedError, 'kind' | 'retryAfterMs'> => ({
  kind: 'rate_limited',
  retryAfterMs,
})

/** A seeded PRNG (mulberry32), so the distribution tests are reproducible. */
function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe('retryDelay', () => {
  it('backs off 1, 2, 4, 8, 16 s and caps at 20 s before jitter', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 50].map((attempt) => backoffMs({ attempt }))).toEqual([
      1000, 2000, 4000, 8000, 16000, 20000, 20000, 20000,
    ])
  })

  it('adds 0–30 % jitter: over 10,000 samples every wait lies in [base, 1.3 × base] and they spread', () => {
    const random = seeded(42)
    for (const attempt of [1, 3, 6]) {
      const base = backoffMs({ attempt })
      const samples = Array.from(
        { length: 10_000 },
        () => retryDelay({ attempt, error: rateLimited(), random }).delayMs,
      )
      const min = Math.min(...samples)
      const max = Math.max(...samples)
      expect(min).toBeGreaterThanOrEqual(base)
      expect(max).toBeLessThanOrEqual(1.3 * base)
      // Spread, not a constant: the samples cover most of the 30 % band and have many values.
      expect(max - min).toBeGreaterThan(0.25 * base)
      expect(new Set(samples).size).toBeGreaterThan(100)
      const mean = samples.reduce((a, b) => a + b, 0) / samples.length
      expect(mean).toBeGreaterThan(1.13 * base)
      expect(mean).toBeLessThan(1.17 * base)
    }
  })

  it('uses the extremes of the random source exactly: 0 gives the base, ~1 gives base + 30 %', () => {
    expect(retryDelay({ attempt: 2, error: rateLimited(), random: () => 0 })).toEqual({
      delayMs: 2000,
      source: 'backoff',
    })
    expect(retryDelay({ attempt: 2, error: rateLimited(), random: () => 0.999999 }).delayMs).toBe(
      2600,
    )
  })

  it('honours the server hint first, whatever the attempt, adding at most 10 % by default', () => {
    expect(retryDelay({ attempt: 1, error: rateLimited(34_400), random: () => 0 })).toEqual({
      delayMs: 34_400,
      source: 'server',
    })
    expect(retryDelay({ attempt: 5, error: rateLimited(2000), random: () => 0.5 }).delayMs).toBe(
      2100,
    )
    expect(
      retryDelay({ attempt: 1, error: rateLimited(2000), random: () => 0.99, hintJitterRatio: 0 })
        .delayMs,
    ).toBe(2000)
    // A hint of 0 means "now", not "no hint".
    expect(retryDelay({ attempt: 3, error: rateLimited(0), random: () => 0.5 }).delayMs).toBe(0)
  })

  it('waits at least 5 s plus up to 5 s more after an overload with no hint', () => {
    const random = seeded(7)
    const samples = Array.from({ length: 5000 }, () =>
      retryDelay({ attempt: 1, error: { kind: 'overloaded' }, random }),
    )
    expect(samples.every((s) => s.source === 'overload')).toBe(true)
    const waits = samples.map((s) => s.delayMs)
    expect(Math.min(...waits)).toBeGreaterThanOrEqual(5000)
    expect(Math.max(...waits)).toBeLessThanOrEqual(10_000)
    expect(Math.max(...waits) - Math.min(...waits)).toBeGreaterThan(4000)
  })

  it('an overload with a server hint follows the hint', () => {
    expect(
      retryDelay({
        attempt: 1,
        error: { kind: 'overloaded', retryAfterMs: 1000 },
        random: () => 0,
      }),
    ).toEqual({ delayMs: 1000, source: 'server' })
  })

  it('a baseDelayMs of 0 waits 0 at any attempt: past attempt 1024 it was a NaN wait (0 × 2^1024)', () => {
    for (const attempt of [1, 10, 1024, 1025, 5000, Number.MAX_SAFE_INTEGER]) {
      expect(backoffMs({ attempt, baseDelayMs: 0 })).toBe(0)
      expect(retryDelay({ attempt, baseDelayMs: 0, error: { kind: 'server_error' } })).toEqual({
        delayMs: 0,
        source: 'backoff',
      })
    }
    // A base above 0 still reaches its cap there, not Infinity.
    expect(backoffMs({ attempt: 5000, baseDelayMs: 1 })).toBe(20_000)
  })

  it('never produces a negative or NaN wait from a misbehaving random source', () => {
    for (const value of [-5, Number.NaN, 7]) {
      const { delayMs } = retryDelay({ attempt: 1, error: rateLimited(), random: () => value })
      expect(delayMs).toBeGreaterThanOrEqual(1000)
      expect(delayMs).toBeLessThanOrEqual(1300)
    }
  })
})
