/**
 * Where cooldowns live. Times cross the store as *relative* milliseconds
 * ("cooling for 840 more ms"), never as timestamps: two hosts' clocks never
 * have to agree, the store's own clock (Redis's, for `RedisCooldownStore`)
 * is the only one that counts.
 *
 * A call that rejects, or goes `storeTimeoutMs` unanswered (`Admission`'s
 * option, default 1000 for a store of your own), counts as the store
 * failing: admission decides on its own process's view meanwhile. A store
 * need not bound its own calls, and one with a longer bound of its own
 * needs a `storeTimeoutMs` of at least that.
 */
export interface CooldownStore {
  /** The cooldown left for each key id, in ms (0 = not cooling), in one round trip, in order. */
  remaining(provider: string, keyIds: readonly string[]): Promise<number[]>
  /**
   * Make the cooldown of `provider`+`keyId` last at least `waitMs` from now.
   * Atomic and never shortening: of two concurrent extensions the longer
   * wins. Resolves to the cooldown left after the call and whether it grew.
   */
  extend(
    provider: string,
    keyId: string,
    waitMs: number,
    reason: string,
  ): Promise<CooldownExtension>
  /**
   * Optional: the connection's state (`RedisCooldownStore` passes on
   * ioredis's). After a failure admission stops asking the store for a
   * while; a store seen other than `ready` meanwhile, then `ready` again,
   * has a new connection that answered, and is asked again at once.
   */
  readonly status?: string | undefined
}

export interface CooldownExtension {
  /** The cooldown left after the call, in ms. */
  remainingMs: number
  /** False when an equal or longer cooldown was already in place. */
  extended: boolean
}
