/** One bucket of a latency histogram: [fromMs, toMs) and how many samples fell in it. */
export interface Bucket {
  fromMs: number
  toMs: number
  count: number
}

/** Linear buckets of a "nice" width (1, 2, 5 × 10ⁿ ms) covering every sample. */
export function histogram(valuesMs: readonly number[], maxBuckets = 8): Bucket[] {
  if (valuesMs.length === 0) return []
  const min = Math.min(...valuesMs)
  const max = Math.max(...valuesMs)
  const width = niceWidth((max - min) / maxBuckets)
  // Edges are rounded to the width's own decimals: 3 × 0.1 is 0.30000000000000004.
  const edge = (k: number) => Number((k * width).toFixed(decimals(width)))
  // The float division can say one bucket off at either end: 0.3 / 0.05 is
  // 5.999…, so 0.3 started a bucket early (an empty 0.25–0.30 first row), and
  // 0.7 in 0.05 ms buckets from 0.25 was 8.999…, counted in 0.65–0.70. Set
  // by the printed edges; rounding moves each one bucket at most.
  let first = Math.floor(min / width)
  if (edge(first + 1) <= min) first++
  else if (edge(first) > min) first--
  let count = Math.max(1, Math.floor((max - first * width) / width) + 1)
  if (edge(first + count) <= max) count++
  else if (count > 1 && edge(first + count - 1) > max) count--
  const buckets = Array.from({ length: count }, (_, i) => ({
    fromMs: edge(first + i),
    toMs: edge(first + i + 1),
    count: 0,
  }))
  for (const v of valuesMs) buckets[bucketOf(buckets, v, Math.floor(v / width) - first)]!.count++
  return buckets
}

/**
 * The bucket whose rounded edges hold `v`, starting from `guess` (the
 * division's): in floating point the division can say -1 (3036.7 with
 * 3036.7 at the first edge: `histogram([3036.7, 3036.792])` threw) or one
 * bucket low (0.3 in `0.25–0.30`), where the printed edges say otherwise.
 */
function bucketOf(buckets: readonly Bucket[], v: number, guess: number): number {
  let i = Math.min(buckets.length - 1, Math.max(0, guess))
  while (i > 0 && v < buckets[i]!.fromMs) i--
  while (i < buckets.length - 1 && v >= buckets[i + 1]!.fromMs) i++
  return i
}

/** Decimal places that show a multiple of `width` exactly: 0 for 5 ms, 1 for 0.2, 2 for 0.05. */
function decimals(width: number): number {
  return Math.min(6, Math.max(0, -Math.floor(Math.log10(width) + 1e-9)))
}

function niceWidth(raw: number): number {
  if (!(raw > 0)) return 1
  const power = 10 ** Math.floor(Math.log10(raw))
  for (const step of [1, 2, 5, 10]) if (raw <= step * power) return step * power
  return 10 * power
}

/** The histogram as text: one line per bucket, a bar scaled to `barWidth`. */
export function renderHistogram(buckets: readonly Bucket[], barWidth = 40): string[] {
  const most = Math.max(1, ...buckets.map((b) => b.count))
  // Each label as precise as the buckets are wide: with 0.02 ms buckets, one
  // decimal would print several buckets under the same label.
  const width = buckets.length > 0 ? buckets[0]!.toMs - buckets[0]!.fromMs : 1
  const fmt = (ms: number) => ms.toFixed(decimals(width))
  const labels = buckets.map((b) => `${fmt(b.fromMs)}–${fmt(b.toMs)} ms`)
  const labelWidth = Math.max(...labels.map((l) => l.length))
  return buckets.map((b, i) => {
    const bar = '#'.repeat(Math.round((b.count / most) * barWidth))
    return `  ${labels[i]!.padStart(labelWidth)} |${bar}${b.count > 0 ? ` ${b.count}` : ''}`
  })
}
