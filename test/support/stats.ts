export interface Stats {
  count: number
  mean: number
  median: number
  p90: number
  p99: number
  max: number
}

/** Nearest-rank summary of a list of numbers (NaN fields when empty). */
export function stats(values: readonly number[]): Stats {
  const sorted = [...values].sort((a, b) => a - b)
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? Number.NaN
  return {
    count: values.length,
    mean: values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length,
    median: at(0.5),
    p90: at(0.9),
    p99: at(0.99),
    max: at(1),
  }
}

export function showStats(s: Stats, unit = 'ms'): string {
  const f = (n: number) => n.toFixed(1)
  return `n=${s.count} mean ${f(s.mean)}, median ${f(s.median)}, p90 ${f(s.p90)}, p99 ${f(s.p99)}, max ${f(s.max)} ${unit}`
}
