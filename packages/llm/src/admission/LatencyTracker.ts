export interface LatencyTrackerOptions {
  /** Successful latencies kept per provider. Default 50. */
  samples?: number | undefined
  /** The percentile reported as the time a call needs, in (0, 1]. Default 0.9. */
  percentile?: number | undefined
}

/**
 * Recent successful latencies per provider, so admission knows how much of a
 * deadline a call needs after a wait. A percentile of a small ring rather
 * than a mean: one slow answer should not make every caller give up, and a
 * mean hides the tail that decides whether the answer arrives in time.
 */
export class LatencyTracker {
  readonly #samples: number
  readonly #percentile: number
  readonly #rings = new Map<
    string,
    { values: number[]; next: number; estimate: number | undefined }
  >()

  constructor(options: LatencyTrackerOptions = {}) {
    this.#samples = Math.max(1, Math.floor(options.samples ?? 50))
    const p = options.percentile ?? 0.9
    this.#percentile = p > 0 && p <= 1 ? p : 0.9
  }

  record(provider: string, latencyMs: number): void {
    if (!Number.isFinite(latencyMs) || latencyMs < 0) return
    let ring = this.#rings.get(provider)
    if (!ring) {
      ring = { values: [], next: 0, estimate: undefined }
      this.#rings.set(provider, ring)
    }
    if (ring.values.length < this.#samples) ring.values.push(latencyMs)
    else ring.values[ring.next] = latencyMs
    ring.next = (ring.next + 1) % this.#samples
    // Asked before every attempt, changed only by a success: sorted again on the next ask.
    ring.estimate = undefined
  }

  /** The chosen percentile of recent successful latencies, in ms; undefined before the first. */
  estimate(provider: string): number | undefined {
    const ring = this.#rings.get(provider)
    if (!ring || ring.values.length === 0) return undefined
    if (ring.estimate === undefined) {
      const sorted = [...ring.values].sort((a, b) => a - b)
      const index = Math.min(sorted.length - 1, Math.ceil(this.#percentile * sorted.length) - 1)
      ring.estimate = sorted[Math.max(0, index)]
    }
    return ring.estimate
  }
}
