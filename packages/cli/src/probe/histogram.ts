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
  const start = Math.floor(min / width) * width
  const count = Math.max(1, Math.floor((max - start) / width) + 1)
  // Edges are rounded to the width's own decimals: 3 × 0.1 is 0.30000000000000004.
  const edge = (i: number) =>
    Number(((Math.floor(min / width) + i) * width).toFixed(decimals(width)))
  const buckets = Array.from({ length: count }, (_, i) => ({
    fromMs: edge(i),
    toMs: edge(i + 1),
    count: 0,
  }))
  for (const v of valuesMs) buckets[Math.min(count - 1, Math.floor((v - start) / width))]!.count++
  return buckets
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
