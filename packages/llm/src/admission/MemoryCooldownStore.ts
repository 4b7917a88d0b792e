import { type Clock, systemClock } from '@hourglass/core'
import type { CooldownExtension, CooldownStore } from './CooldownStore.js'

export interface MemoryCooldownStoreOptions {
  /** Time source (monotonic ms). Default `systemClock`. */
  clock?: Clock | undefined
}

/** Cooldowns in this process's memory: the default store. Expired entries are dropped when read. */
export class MemoryCooldownStore implements CooldownStore {
  readonly #clock: Clock
  readonly #until = new Map<string, number>()

  constructor(options: MemoryCooldownStoreOptions = {}) {
    this.#clock = options.clock ?? systemClock
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
    const current = this.#until.get(name) ?? 0
    const wanted = now + Math.max(0, waitMs)
    if (wanted <= current) return Promise.resolve({ remainingMs: current - now, extended: false })
    this.#until.set(name, wanted)
    return Promise.resolve({ remainingMs: wanted - now, extended: true })
  }
}

function entry(provider: string, keyId: string): string {
  return `${provider}\u0000${keyId}`
}
