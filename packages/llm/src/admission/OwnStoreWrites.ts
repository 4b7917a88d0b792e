/**
 * Writes remembered at most; past it the ended ones go, then those ending
 * soonest (a dropped one read back is taken as another instance's: for a
 * cooldown, one learned start and one probe more, never a cooldown missed;
 * the long ones kept, a forgotten retirement's above all, which read back
 * held its key as cooling for the rest of `retireMs`).
 */
export const MAX_OWN_STORE_WRITES = 4096

/**
 * The least end each of this process's own writes to the cooldown store can
 * have there, by store entry (`scope` NUL `storeId`): the time the write was
 * sent plus its wait, since the store starts the wait once it takes the
 * write. What `CooldownBook.refresh` tells its own write read back by.
 *
 * Not the most (the answer's time plus the wait): a write answered late (a
 * busy Redis, a stalled loop) made that most far past the store's real end,
 * and another instance's 429 on the key ending in between was taken for this
 * process's own write and skipped — the key granted into the same limit.
 * Kept apart from the slots: a retirement forgotten past `MAX_RETIRED_SLOTS`
 * leaves its slot idle, a sweep drops it, and its write, which the store
 * still holds, was read back as another instance's cooldown (its key held
 * for the rest of `retireMs`, not tried once more).
 */
export class OwnStoreWrites {
  readonly #leastEnd = new Map<string, number>()
  /** The wait of the write each least end is of. */
  readonly #waitMs = new Map<string, number>()
  readonly #slackMs: number

  /** `slackMs`: how much later than its least end the store's end may be read and still be it. */
  constructor(slackMs: number) {
    this.#slackMs = slackMs
  }

  /**
   * A write of `name` sent at `sentAt` for `waitMs` was answered (`now`):
   * `waitMs` as the store took it (a store caps what it keeps —
   * RedisCooldownStore at 10¹⁵ ms —: the wait asked for read back as
   * another instance's).
   */
  wrote(name: string, sentAt: number, waitMs: number, now: number): void {
    const wait = Math.max(0, waitMs)
    const end = sentAt + wait
    const held = this.#leastEnd.get(name)
    if (held !== undefined && held >= end) return
    this.#leastEnd.set(name, end)
    this.#waitMs.set(name, wait)
    if (this.#leastEnd.size > MAX_OWN_STORE_WRITES) this.#prune(now)
  }

  /**
   * The store's end for `name`, read back as `endMs` (its most: the time the
   * answer came plus what was left), is certainly this process's own write:
   * that write's least end, no later than the slack. Not one well before it
   * either: the store keeps the longer wait, so a much shorter end is
   * another instance's, written after the store lost this one's (a Redis
   * restarted without persistence, an eviction) — taken for its own, its 429
   * was missed. "Well before": past the slack and a thousandth of the wait,
   * which a store's own clock may run apart by over an hour's retirement.
   */
  isOwn(name: string, endMs: number): boolean {
    const end = this.#leastEnd.get(name)
    if (end === undefined || endMs > end + this.#slackMs) return false
    const waitMs = this.#waitMs.get(name) ?? 0
    return endMs >= end - this.#slackMs - waitMs / 1000
  }

  /** Entries held (for tests and diagnostics). */
  get size(): number {
    return this.#leastEnd.size
  }

  /**
   * Drops every write that can no longer be read back, then those ending
   * soonest down to half the cap: a prune (a sort of at most the cap) runs
   * once per half a cap of writes, however many live.
   */
  #prune(now: number): void {
    for (const [name, end] of this.#leastEnd) {
      if (end + this.#slackMs <= now) this.#forget(name)
    }
    const excess = this.#leastEnd.size - MAX_OWN_STORE_WRITES / 2
    if (excess <= 0) return
    const soonest = [...this.#leastEnd].sort((a, b) => a[1] - b[1])
    for (let i = 0; i < excess; i++) this.#forget((soonest[i] as [string, number])[0])
  }

  #forget(name: string): void {
    this.#leastEnd.delete(name)
    this.#waitMs.delete(name)
  }
}
