import { type Clock, optionError, refuseUnknownOptions } from '@hourglass/core'
import { clockOption } from '../clockOption.js'
import type { SideEffectRecord, SideEffectStore } from './SideEffectStore.js'

/**
 * Completed runs a `MemorySideEffectStore` holds by default. The process-wide
 * store behind `sideEffect` and `runTurns` lives as long as the process and
 * kept every result for its TTL (24 h): a busy agent service with large tool
 * outputs grew for a day. 10 000 is far more calls than any run retries
 * within, and a few tens of MB at 1–5 KB a result.
 */
export const DEFAULT_MAX_SIDE_EFFECT_ENTRIES = 10_000

export interface MemorySideEffectStoreOptions {
  /** Drives expiry; inject a `ManualClock` in tests. Default: the system's monotonic clock. */
  clock?: Clock | undefined
  /**
   * Completed runs held at most: past it, expired entries are swept, then
   * the oldest completed ones are dropped — a later call with a dropped key
   * runs its `fn` again, so a retry finds its result only within this many
   * other completed calls. A run in progress is never in the store (see
   * `sideEffect`), so it is never dropped. Default
   * `DEFAULT_MAX_SIDE_EFFECT_ENTRIES` (10 000); `Infinity` = bounded only by the TTL.
   */
  maxEntries?: number | undefined
}

interface Entry {
  record: SideEffectRecord
  expiresAt: number
}

/** Every option the constructor reads (the type checker keeps the list whole). */
const OPTION_NAMES = Object.keys({
  clock: true,
  maxEntries: true,
} satisfies Record<keyof MemorySideEffectStoreOptions, true>)

/**
 * The default `SideEffectStore`: a `Map` in this process, holding at most
 * `maxEntries` completed runs. Expired entries are dropped when read, swept
 * from the front on every write, and all of them before any live entry is
 * dropped for the bound (no timer: one would hold the process, or need
 * `unref`). Results are kept by reference, not measured: their size is
 * bounded only through the number of entries.
 */
export class MemorySideEffectStore implements SideEffectStore {
  readonly #clock: Clock
  readonly #maxEntries: number
  /** In insertion order, which is expiry order when TTLs are equal (the usual case). */
  readonly #entries = new Map<string, Entry>()
  /** No entry expires before this (a lower bound: removals do not raise it). */
  #earliestExpiry = Number.POSITIVE_INFINITY

  constructor(options: MemorySideEffectStoreOptions = {}) {
    // Ignored, `maxEntrys: 100` left the default bound in force.
    refuseUnknownOptions(options, OPTION_NAMES, 'new MemorySideEffectStore()')
    const max = options.maxEntries
    // NaN, 0 or a negative bound would remember nothing (or everything):
    // refused, not given a meaning.
    if (max !== undefined && !(typeof max === 'number' && max >= 1)) {
      throw optionError(
        'MemorySideEffectStore: maxEntries',
        'a number ≥ 1 (Infinity: no bound)',
        max,
      )
    }
    // Refused here, naming it, as MemoryCooldownStore refuses it: a class
    // (`ManualClock` without `new`) was taken, the first `set()` threw, and
    // through `sideEffect` that throw was swallowed — results went to a
    // fallback store on the system clock, the test's clock expired nothing.
    const clock = clockOption('MemorySideEffectStore', options.clock)
    this.#clock = clock
    this.#maxEntries = max ?? DEFAULT_MAX_SIDE_EFFECT_ENTRIES
  }

  /** Entries held, expired ones not yet swept included. */
  get size(): number {
    return this.#entries.size
  }

  get(key: string): SideEffectRecord | undefined {
    const entry = this.#entries.get(key)
    if (entry === undefined) return undefined
    if (entry.expiresAt <= this.#clock.now()) {
      this.#entries.delete(key)
      return undefined
    }
    return entry.record
  }

  set(key: string, record: SideEffectRecord, ttlMs: number): void {
    const now = this.#clock.now()
    this.#sweepFront(now)
    if (!(ttlMs > 0)) return
    // Re-inserting moves the key to the end, keeping the map in rough expiry order.
    this.#entries.delete(key)
    const expiresAt = now + ttlMs
    this.#entries.set(key, { record, expiresAt })
    if (expiresAt < this.#earliestExpiry) this.#earliestExpiry = expiresAt
    if (this.#entries.size > this.#maxEntries) this.#bound(now)
  }

  #sweepFront(now: number): void {
    for (const [key, entry] of this.#entries) {
      // Insertion order is expiry order when TTLs are equal (the usual case);
      // stop at the first live entry so a write costs O(expired), not O(size).
      if (entry.expiresAt > now) break
      this.#entries.delete(key)
    }
  }

  /**
   * Over `maxEntries`: every expired entry goes first — the front sweep
   * stops at the first live one, so with differing TTLs (a long one ahead
   * of short ones) some can be left behind it — then the oldest completed
   * ones. The full scan runs only when an entry may have expired
   * (`#earliestExpiry`); with one TTL the front sweep has taken them all
   * and an overflow costs O(1). The newest entry is never the one dropped.
   */
  #bound(now: number): void {
    if (this.#earliestExpiry <= now) {
      let earliest = Number.POSITIVE_INFINITY
      for (const [key, entry] of this.#entries) {
        if (entry.expiresAt <= now) this.#entries.delete(key)
        else if (entry.expiresAt < earliest) earliest = entry.expiresAt
      }
      this.#earliestExpiry = earliest
    }
    for (const key of this.#entries.keys()) {
      if (this.#entries.size <= this.#maxEntries) break
      this.#entries.delete(key)
    }
  }
}
