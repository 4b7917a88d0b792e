export interface LatencyTrackerOptions {
  /** Successful latencies kept per provider. Default 50. */
  samples?: number | undefined
  /** The percentile reported as the time a call needs, in (0, 1]. Default 0.9. */
  percentile?: number | undefined
}

/**
 * Rings kept at most: one per provider and one per model (`modelScope`), so
 * a service passing its clients' model names through made one per name it
 * ever saw (~1 KB each, for the life of the default admission). At the cap
 * the least recently recorded half goes.
 */
export const MAX_LATENCY_RINGS = 1024

/**
 * Recent successful latencies per provider, so admission knows how much of a
 * deadline a call needs after a wait. A percentile of a small ring rather
 * than a mean: one slow answer should not make every caller give up, and a
 * mean hides the tail that decides whether the answer arrives in time.
 */
export class LatencyTracker {
  readonly #samples: number
  readonly #percentile: number
  readonly #rings = new Map<string, Ring>()
  /** Counts samples recorded: a ring's `used` says how recently it was recorded into. */
  #recorded = 0

  constructor(options: LatencyTrackerOptions = {}) {
    this.#samples = Math.max(1, Math.floor(options.samples ?? 50))
    const p = options.percentile ?? 0.9
    this.#percentile = p > 0 && p <= 1 ? p : 0.9
  }

  record(provider: string, latencyMs: number): void {
    if (!Number.isFinite(latencyMs) || latencyMs < 0) return
    let ring = this.#rings.get(provider)
    if (!ring) {
      if (this.#rings.size >= MAX_LATENCY_RINGS) this.#dropOldestHalf()
      ring = { values: [], sorted: [], next: 0, used: 0 }
      this.#rings.set(provider, ring)
    }
    ring.used = ++this.#recorded
    // Recorded after every success and read before every attempt: the sorted
    // copy is kept in order here (one removal, one insertion, by binary
    // search) rather than sorted again on the next read.
    if (ring.values.length < this.#samples) ring.values.push(latencyMs)
    else {
      const evicted = ring.values[ring.next] as number
      ring.values[ring.next] = latencyMs
      ring.sorted.splice(lowerBound(ring.sorted, evicted), 1)
    }
    ring.sorted.splice(lowerBound(ring.sorted, latencyMs), 0, latencyMs)
    ring.next = (ring.next + 1) % this.#samples
  }

  /** Rings held (for tests and diagnostics). */
  get size(): number {
    return this.#rings.size
  }

  /**
   * Drops the half of the rings least recently recorded into (a model that
   * comes back starts again from `defaultNeededMs`, as a new one does). Runs
   * once per `MAX_LATENCY_RINGS / 2` rings made, never on a known ring's path.
   */
  #dropOldestHalf(): void {
    const used = Float64Array.from(this.#rings.values(), (ring) => ring.used).sort()
    const keepFrom = used[used.length >> 1] as number
    for (const [name, ring] of this.#rings) if (ring.used < keepFrom) this.#rings.delete(name)
  }

  /** The chosen percentile of recent successful latencies, in ms; undefined before the first. */
  estimate(provider: string): number | undefined {
    const sorted = this.#rings.get(provider)?.sorted
    if (sorted === undefined || sorted.length === 0) return undefined
    const index = Math.min(sorted.length - 1, Math.ceil(this.#percentile * sorted.length) - 1)
    return sorted[Math.max(0, index)]
  }
}

interface Ring {
  /** The last samples, in the order they came (`next` is the oldest once full). */
  values: number[]
  /** The same samples, ascending. */
  sorted: number[]
  next: number
  /** When it was last recorded into, in samples recorded by the tracker. */
  used: number
}

/** The first index in ascending `sorted` whose value is not below `value`. */
function lowerBound(sorted: readonly number[], value: number): number {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if ((sorted[mid] as number) < value) lo = mid + 1
    else hi = mid
  }
  return lo
}
