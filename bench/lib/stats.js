// Small statistics helpers. Every figure the bench reports is a ratio of two
// medians measured in the same run, so these stay deliberately plain.

/** Median of a list of numbers (NaN for an empty list). */
export function median(values) {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** Nearest-rank percentile, p in [0, 1] (NaN for an empty list). */
export function percentile(values, p) {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const rank = Math.max(1, Math.ceil(p * sorted.length))
  return sorted[Math.min(sorted.length, rank) - 1]
}

export function max(values) {
  return values.length === 0 ? Number.NaN : values.reduce((a, b) => Math.max(a, b), -Infinity)
}

/**
 * Runs `measure(variant, round)` for every variant, interleaved A B C A B C …
 * for `rounds` rounds, and returns each variant's list of per-round results.
 * The starting variant rotates each round so that no variant always runs
 * right after the same neighbour (GC debt, CPU frequency, a noisy neighbour).
 */
export async function interleave(variants, rounds, measure) {
  const results = Object.fromEntries(variants.map((v) => [v, []]))
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < variants.length; i++) {
      const variant = variants[(i + round) % variants.length]
      results[variant].push(await measure(variant, round))
    }
  }
  return results
}

/** The median over rounds of one field of each round's result. */
export function medianOf(roundResults, pick) {
  return median(roundResults.map(pick))
}
