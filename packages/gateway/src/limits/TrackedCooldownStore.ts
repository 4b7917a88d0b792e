import { type CooldownExtension, type CooldownStore, isStoreTimeout } from '../llm.js'

/**
 * The cooldown store admission uses, watched: `failing` is true from a
 * failed call until the next one that succeeds, so `/readyz` can say the
 * cooldowns are being decided locally without parsing admission's log text;
 * `onFailure` hears of every failed call (what Redis was last seen doing
 * has changed), `onSuccess` of every call that succeeded (Redis answers).
 * `unanswered` says the last call failed because Redis did not answer in
 * time — not that it refused: the limits' count, next in the same request,
 * then decides locally rather than wait for the same silence
 * (`LimitsRedisClient`).
 */
export class TrackedCooldownStore implements CooldownStore {
  readonly #inner: CooldownStore
  readonly #onFailure: () => void
  readonly #onSuccess: () => void
  failing = false
  /** The last call failed unanswered (timed out), not refused: false again once a call settles otherwise. */
  unanswered = false

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
      this.unanswered = false
      this.#onSuccess()
      return value
    } catch (error) {
      this.failing = true
      this.unanswered = isUnanswered(error)
      this.#onFailure()
      throw error
    }
  }
}

/**
 * A command Redis did not answer within its bound: llm's own bound
 * (`StoreTimeoutError`) or ioredis's `commandTimeout`, whichever fired
 * first (ioredis's is a plain Error, told by its message, "Command timed
 * out"). Anything else — Redis refusing the script, a client not ready
 * (which the limits read from its `status` themselves), an unknown client's
 * own wording — is not taken for silence: at worst the limits ask Redis as
 * they did before.
 */
function isUnanswered(error: unknown): boolean {
  return isStoreTimeout(error) || (error instanceof Error && error.message === 'Command timed out')
}
