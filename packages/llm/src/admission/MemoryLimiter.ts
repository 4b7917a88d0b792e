import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible'

/**
 * The option a give-back (`reward`) names the window that counted its
 * request with: that window's end, epoch ms on `Date.now` (the clock of
 * rate-limiter-flexible's memory storage). `ProviderLimits` passes it.
 */
export const COUNTED_WINDOW_END = 'countedWindowEndsAt'

/**
 * How far a give-back's window end may be from the stored one's: a count in
 * memory names the stored end itself (`consume` writes it), a count of
 * another store `Date.now()` plus the ms left; this is a margin, not the
 * rule. Two windows of a key end at least a window (≥ 1000 ms) apart.
 */
const WINDOW_END_SLACK_MS = 50

/**
 * One key's window in rate-limiter-flexible's memory storage (v11:
 * `_memoryStorage._storage`, a Map of the prefixed key to its `Record`):
 * its count, and its end in epoch ms on `Date.now` (null: none).
 */
interface StoredWindow {
  value: number
  expiresAt: number | null
}

/**
 * rate-limiter-flexible's in-memory limiter with the contract of
 * `LIMIT_SCRIPT` (ProviderLimits.ts): a refused consume counts nothing, and
 * a give-back goes only to the window that counted it, never below zero.
 *
 * The library's `reward` adds to whatever window the key has when it runs,
 * and starts one below zero when there is none: a request counted as its
 * window ended and given back in the next one let that window admit a
 * request (and its tokens: 1850 of a TPM limit of 1000) past the limit, and
 * a request Redis counted, given back here once Redis was down, lent this
 * process's local share one it never counted. Read first (`get`) and given
 * back after, the window could still end in between (the clock ticking
 * across the await): 3 requests in the next window of an RPM limit of 2.
 * So both the refused consume's take-back and the give-back read the
 * window and lower its count at once, on the stored window itself —
 * synchronously, nothing between the check and the write.
 */
export class MemoryLimiter extends RateLimiterMemory {
  override async consume(
    key: string | number,
    points = 1,
    options: { [key: string]: unknown } = {},
  ): Promise<RateLimiterRes> {
    const windows = this.#windows()
    const counted = super.consume(key, points, options)
    // The library counts synchronously: this is the window it counted in.
    const window = windows?.get(this.getKey(key))
    // Its end, for the count's give-back to name it by (`ProviderLimits`'s
    // `take`), as read now: read once the count's continuation ran, a busy
    // step, a GC pause or 3,000 callers counting at once moved it past
    // `WINDOW_END_SLACK_MS`, and the give-back, naming another window, gave
    // nothing back until the reset.
    if (typeof window?.expiresAt === 'number') options[COUNTED_WINDOW_END] = window.expiresAt
    try {
      return await counted
    } catch (refused) {
      if (refused instanceof RateLimiterRes) {
        // Taken back from that window only, if it is still the key's and
        // open: one that ended across the await is gone (or replaced by the
        // next window, which never counted this), and a take-back there
        // started it below zero (-900 of a TPM limit of 1000: 1800
        // admitted). A library that keeps its windows elsewhere (another
        // minor of v11): through its own `reward`, as before.
        if (windows === undefined) await super.reward(key, points, options)
        else if (window !== undefined) this.#lower(key, window, points)
      }
      throw refused
    }
  }

  override async reward(
    key: string | number,
    points = 1,
    options: { [key: string]: unknown } = {},
  ): Promise<RateLimiterRes> {
    const windows = this.#windows()
    if (!(points > 0) || windows === undefined) return super.reward(key, points, options)
    const window = windows.get(this.getKey(key))
    const endsAt = options[COUNTED_WINDOW_END]
    // Only the window that counted the request: the one ending when it did.
    const same =
      window !== undefined &&
      (typeof endsAt !== 'number' ||
        (typeof window.expiresAt === 'number' &&
          Math.abs(window.expiresAt - endsAt) <= WINDOW_END_SLACK_MS))
    if (same) this.#lower(key, window, points)
    const now = Date.now()
    const left = window?.expiresAt
    if (window === undefined || typeof left !== 'number' || left <= now) {
      return new RateLimiterRes(this.points, 0, 0, false)
    }
    return new RateLimiterRes(
      Math.max(this.points - window.value, 0),
      left - now,
      window.value,
      false,
    )
  }

  /**
   * Lowers `window`'s count by `points`, never below zero — if it is still
   * `key`'s window and has not ended (every window here has an end).
   */
  #lower(key: string | number, window: StoredWindow, points: number): void {
    if (this.#windows()?.get(this.getKey(key)) !== window) return
    if (typeof window.expiresAt !== 'number' || window.expiresAt <= Date.now()) return
    window.value -= Math.min(points, Math.max(0, window.value))
  }

  /**
   * The library's stored windows (see `StoredWindow`); undefined when a
   * version keeps them elsewhere (the lockfile has 11.4.0; the range is
   * ^11): give-backs then go through its own `reward`, not at once —
   * `limitsGiveBackAtomic.test.ts` fails on such a version, so it is seen.
   */
  #windows(): Map<string, StoredWindow> | undefined {
    const windows = (this as unknown as { _memoryStorage?: { _storage?: unknown } })._memoryStorage
      ?._storage
    return windows instanceof Map ? (windows as Map<string, StoredWindow>) : undefined
  }
}
