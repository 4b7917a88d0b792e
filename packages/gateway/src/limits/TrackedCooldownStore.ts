import type { CooldownExtension, CooldownStore } from '../llm.js'

/**
 * The cooldown store admission uses, watched: `failing` is true from a
 * failed call until the next one that succeeds, so `/readyz` can say the
 * cooldowns are being decided locally without parsing admission's log text;
 * `onFailure` hears of every failed call (what Redis was last seen doing
 * has changed), `onSuccess` of every call that succeeded (Redis answers).
 */
export class TrackedCooldownStore implements CooldownStore {
  readonly #inner: CooldownStore
  readonly #onFailure: () => void
  readonly #onSuccess: () => void
  failing = false

  constructor(
    inner: CooldownStore,
    onFailure: () => void = () => {},
    onSuccess: () => void = () => {},
  ) {
    this.#inner = inner
    this.#onFailure = onFailure
    this.#onSuccess = onSuccess
  }

  /** The inner store's connection state (admission ends its back-off when a reconnected one is ready). */
  get status(): string | undefined {
    return this.#inner.status
  }

  remaining(provider: string, keyIds: readonly string[]): Promise<number[]> {
    return this.#watch(this.#inner.remaining(provider, keyIds))
  }

  extend(
    provider: string,
    keyId: string,
    waitMs: number,
    reason: string,
  ): Promise<CooldownExtension> {
    return this.#watch(this.#inner.extend(provider, keyId, waitMs, reason))
  }

  async #watch<T>(call: Promise<T>): Promise<T> {
    try {
      const value = await call
      this.failing = false
      this.#onSuccess()
      return value
    } catch (error) {
      this.failing = true
      this.#onFailure()
      throw error
    }
  }
}
