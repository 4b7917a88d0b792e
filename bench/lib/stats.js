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
 * Runs `measure(variant, round)` for every variant, `rounds` rounds, and
 * returns each variant's list of per-round results. Each round runs every
 * variant once, in an order that changes so that no variant always runs
 * right after the same neighbour (and inherits its garbage, its CPU
 * frequency, a noisy neighbour). A plain rotation (A B C, B C A, C A B) does
 * not do that: it keeps the cyclic order, so B always follows A. The orders
 * here are the rows of a Williams design (a Latin square balanced for the
 * preceding variant), each used forwards and then backwards.
 */
export async function interleave(variants, rounds, measure) {
  const results = Object.fromEntries(variants.map((v) => [v, []]))
  for (let round = 0; round < rounds; round++) {
    for (const i of roundOrder(variants.length, round)) {
      const variant = variants[i]
      results[variant].push(await measure(variant, round))
    }
  }
  return results
}

/**
 * The order of round `round` for `n` variants: row `round >> 1` of a Williams
 * design (0, 1, n−1, 2, n−2, … shifted by the row number), reversed in odd
 * rounds.
 */
export function roundOrder(n, round) {
  const row = (round >> 1) % Math.max(1, n)
  const order = []
  for (let k = 0; k < n; k++) {
    const base = k === 0 ? 0 : k % 2 === 1 ? (k + 1) / 2 : n - k / 2
    order.push((base + row) % n)
  }
  return round % 2 === 1 ? order.reverse() : order
}

/** The median over rounds of one field of each round's result. */
export function medianOf(roundResults, pick) {
  return median(roundResults.map(pick))
}
