import { describe, expect, it } from 'vitest'
import { histogram, renderHistogram } from '../../packages/cli/src/probe/histogram.js'

const labels = (values: number[]) =>
  renderHistogram(histogram(values)).map((line) => line.split('|')[0]!.trim())

describe('probe histogram', () => {
  it('counts every sample once, in buckets of a nice width that cover them all', () => {
    const values = [3, 7, 12, 12.5, 19, 40, 41]
    const buckets = histogram(values)
    expect(buckets.reduce((n, b) => n + b.count, 0)).toBe(values.length)
    expect(buckets[0]!.fromMs).toBeLessThanOrEqual(3)
    expect(buckets.at(-1)!.toMs).toBeGreaterThan(41)
    expect(new Set(buckets.map((b) => b.toMs - b.fromMs)).size).toBe(1)
  })

  it('sub-millisecond samples (a loopback endpoint) get labels as precise as their buckets: no two alike, no float noise', () => {
    const values = [0.21, 0.23, 0.24, 0.26, 0.29, 0.31, 0.33, 0.38]
    const shown = labels(values)
    expect(shown.length).toBeGreaterThan(2)
    expect(new Set(shown).size).toBe(shown.length)
    for (const label of shown) expect(label).toMatch(/^\d+\.\d{2}–\d+\.\d{2} ms$/)
    expect(shown[0]).toBe('0.20–0.25 ms')
  })

  it('tenths and whole milliseconds keep the short labels', () => {
    expect(labels([0.1, 0.4, 0.9, 1.3])[0]).toBe('0.0–0.2 ms')
    expect(labels([12, 30, 55, 90])).toContain('10–20 ms')
    for (const label of labels([0.3, 0.6, 0.9, 1.2, 1.5, 1.8, 2.1, 2.4, 2.7, 3.0])) {
      expect(label).not.toMatch(/0000|9999/)
    }
  })

  it('a sample on a bucket edge goes in the bucket its printed edges name, whatever the float division says', () => {
    // The division put 3036.7 at index -1 (a TypeError) and 0.3 in 0.25–0.30.
    const edge = histogram([3036.7, 3036.792])
    expect(edge.reduce((n, b) => n + b.count, 0)).toBe(2)
    for (const v of [0.3, 0.35, 0.7]) {
      const b = histogram([0.3, 0.35, 0.7]).find((x) => x.fromMs <= v && v < x.toMs)
      expect(b?.count, `${v}`).toBeGreaterThan(0)
    }
    // Nor an empty first row below the fastest sample (0.25–0.30 for 0.3).
    for (const values of [
      [0.3, 0.35, 0.7],
      [1215.6, 1215.9],
      [551.42, 551.51],
      [2600.1, 2600.2, 2600.8],
    ]) {
      const buckets = histogram(values)
      expect(buckets[0]?.count, `${values}`).toBeGreaterThan(0)
      expect(buckets.at(-1)?.count, `${values}`).toBeGreaterThan(0)
      expect(buckets.reduce((n, b) => n + b.count, 0)).toBe(values.length)
    }
  })

  it('one sample, or all alike, is one bucket', () => {
    expect(histogram([5])).toEqual([{ fromMs: 5, toMs: 6, count: 1 }])
    expect(histogram([2, 2, 2]).map((b) => b.count)).toEqual([3])
    expect(histogram([])).toEqual([])
  })
})
