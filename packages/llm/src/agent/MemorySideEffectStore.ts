import { type Clock, systemClock } from '@hourglass/core'
import type { SideEffectRecord, SideEffectStore } from './SideEffectStore.js'

export interface MemorySideEffectStoreOptions {
  /** Drives expiry; inject a `ManualClock` in tests. Default: the system's monotonic clock. */
  clock?: Clock | undefined
}

interface Entry {
  record: SideEffectRecord
  expiresAt: number
}

/**
 * The default `SideEffectStore`: a `Map` in this process. Expired entries are
 * dropped when read and swept on every write, so the map stays bounded by
 * what completed within one TTL.
 */
export class MemorySideEffectStore implements SideEffectStore {
  readonly #clock: Clock
  readonly #entries = new Map<string, Entry>()

  constructor(options: MemorySideEffectStoreOptions = {}) {
    this.#clock = options.clock ?? systemClock
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
    this.#sweep(now)
    if (!(ttlMs > 0)) return
    // Re-inserting moves the key to the end, keeping the map in rough expiry order.
    this.#entries.delete(key)
    this.#entries.set(key, { record, expiresAt: now + ttlMs })
  }

  #sweep(now: number): void {
    for (const [key, entry] of this.#entries) {
      // Insertion order is expiry order when TTLs are equal (the usual case);
      // stop at the first live entry so a write costs O(expired), not O(size).
      if (entry.expiresAt > now) break
      this.#entries.delete(key)
    }
  }
}
