import { describe, expect, it } from 'vitest'
import { LatencyTracker } from '../../src/admission/LatencyTracker.js'

/** The percentile the tracker promises, computed the plain way: sort the last `samples` values. */
function naive(values: readonly number[], samples: number, percentile: number): number | undefined {
  const last = values.slice(-samples)
  if (last.length === 0) return undefined
  const sorted = [...last].sort((a, b) => a - b)
  const index = Math.min(sorted.length - 1, Math.ceil(percentile * sorted.length) - 1)
  return sorted[Math.max(0, index)]
}

describe('LatencyTracker', () => {
  it('reports the percentile of the last N successes after every record, as sorting them would (random sequences with repeats)', () => {
    let seed = 7
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed / 2 ** 31
    }
    for (const [samples, percentile] of [
      [1, 0.9],
      [5, 0.5],
      [50, 0.9],
      [7, 1],
    ] as const) {
      const tracker = new LatencyTracker({ samples, percentile })
      const seen: number[] = []
      expect(tracker.estimate('p')).toBeUndefined()
      for (let i = 0; i < 2000; i++) {
        // Few distinct values, so evictions often remove one of several equal samples.
        const ms = random() < 0.3 ? Math.floor(random() * 5) : Math.round(random() * 1000) / 10
        tracker.record('p', ms)
        seen.push(ms)
        expect(tracker.estimate('p')).toBe(naive(seen, samples, percentile))
      }
    }
  })

  it('keeps providers apart and ignores values that are not a latency', () => {
    const tracker = new LatencyTracker({ samples: 3, percentile: 0.5 })
    tracker.record('a', 100)
    tracker.record('b', 5)
    for (const bad of [Number.NaN, -1, Number.POSITIVE_INFINITY]) tracker.record('a', bad)
    expect(tracker.estimate('a')).toBe(100)
    expect(tracker.estimate('b')).toBe(5)
    expect(tracker.estimate('c')).toBeUndefined()
  })
})
