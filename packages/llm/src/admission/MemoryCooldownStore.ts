import { type Clock, refuseUnknownOptions } from '@hourglass/core'
import { clockOption } from '../clockOption.js'
import type { CooldownExtension, CooldownStore } from './CooldownStore.js'

export interface MemoryCooldownStoreOptions {
  /** Time source (monotonic ms). Default `systemClock`. */
  clock?: Clock | undefined
}

/**
 * Entries held before the expired ones are swept. An entry read again after
 * it expired is dropped then, but one never read again (a client's key or
 * model seen once, cooled once) stayed for the life of the process: a
 * store that sees many distinct keys grew without end.
 */
export const MAX_STORED_COOLDOWNS = 4096

/** Every option the constructor reads (the type checker keeps the list whole). */
const OPTION_NAMES = Object.keys({ clock: true } satisfies Record<
  keyof MemoryCooldownStoreOptions,
  true
>)

/**
 * Cooldowns in this process's memory: the default store. An expired entry
 * is dropped when read, and every expired one when the store passes its
 * sweep size (no timer: one would hold the process, or need `unref`).
 */
export class MemoryCooldownStore implements CooldownStore {
  readonly #clock: Clock
  readonly #until = new Map<string, number>()
  /** The size at which the next sweep for expired entries runs. */
  #sweepAt = MAX_STORED_COOLDOWNS

  constructor(options: MemoryCooldownStoreOptions = {}) {
    // Ignored, a misspelled `clock` left cooldowns on the system clock.
    refuseUnknownOptions(options, OPTION_NAMES, 'new MemoryCooldownStore()')
    // Refused here, naming it: a class (`ManualClock` without `new`) was
    // taken, and the first read threw "this[#clock].now is not a function".
    const clock = clockOption('MemoryCooldownStore', options.clock)
    this.#clock = clock
  }

  remaining(provider: string, keyIds: readonly string[]): Promise<number[]> {
    const now = this.#clock.now()
    return Promise.resolve(
      keyIds.map((id) => {
        const name = entry(provider, id)
        const until = this.#until.get(name)
        if (until === undefined) return 0
        if (until <= now) {
          this.#until.delete(name)
          return 0
        }
        return until - now
      }),
    )
  }

  extend(provider: string, keyId: string, waitMs: number): Promise<CooldownExtension> {
    const now = this.#clock.now()
    const name = entry(provider, keyId)
    const current = this.#until.get(name)
    const held = current ?? 0
    const wanted = now + Math.max(0, waitMs)
    if (wanted <= held) return Promise.resolve({ remainingMs: held - now, extended: false })
    this.#until.set(name, wanted)
    // Only a new entry grows the map: O(1) per write on average.
    if (current === undefined && this.#until.size >= this.#sweepAt) this.#sweep(now)
    return Promise.resolve({ remainingMs: wanted - now, extended: true })
  }

  /** Entries held, expired ones not yet swept included (for tests and diagnostics). */
  get size(): number {
    return this.#until.size
  }

  /**
   * Drops every expired entry. A live one stays (dropping it would lift its
   * cooldown); when most are live, the next sweep waits until the map has
   * doubled, so a sweep costs O(1) per entry made whatever is kept.
   */
  #sweep(now: number): void {
    for (const [name, until] of this.#until) if (until <= now) this.#until.delete(name)
    this.#sweepAt = Math.max(MAX_STORED_COOLDOWNS, 2 * this.#until.size)
  }
}

function entry(provider: string, keyId: string): string {
  return `${provider}\u0000${keyId}`
}
