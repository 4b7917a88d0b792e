import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible'

/**
 * The option a give-back (`reward`) names the window that counted its
 * request with: that window's end, epoch ms on `Date.now` (the clock of
 * rate-limiter-flexible's memory storage). `ProviderLimits` passes it.
 */
export const COUNTED_WINDOW_END = 'countedWindowEndsAt'

/**
 * How far apart two readings of one window's end may be: each is `Date.now()`
 * plus the ms left, read a few ms apart at most. Two windows of a key end
 * at least a window (≥ 1000 ms) apart.
 */
const WINDOW_END_SLACK_MS = 50

/**
 * rate-limiter-flexible's in-memory limiter with the contract of
 * `LIMIT_SCRIPT` (ProviderLimits.ts): a refused consume counts nothing.
 * Its count is taken back before the refusal is seen, so nobody has to give
 * points back later — a give-back that could land in the next window.
 *
 * A give-back that comes later (a request admitted, then not sent) goes only
 * to the window that counted it, and never below zero, as `LIMIT_SCRIPT`
 * gives back. The library's `reward` adds to whatever window the key has
 * now, and starts one below zero when there is none: a request counted as
 * its window ended and given back in the next one let that window admit a
 * request (and its tokens: 1850 of a TPM limit of 1000) past the limit, and
 * a request Redis counted, given back here once Redis was down, lent this
 * process's local share one it never counted.
 */
export class MemoryLimiter extends RateLimiterMemory {
  override async consume(
    key: string | number,
    points = 1,
    options: { [key: string]: unknown } = {},
  ): Promise<RateLimiterRes> {
    try {
      return await super.consume(key, points, options)
    } catch (refused) {
      if (refused instanceof RateLimiterRes) await super.reward(key, points, options)
      throw refused
    }
  }

  override async reward(
    key: string | number,
    points = 1,
    options: { [key: string]: unknown } = {},
  ): Promise<RateLimiterRes> {
    if (!(points > 0)) return super.reward(key, points, options)
    const now = await this.get(key)
    const endsAt = options[COUNTED_WINDOW_END]
    // A window of no expiry reads -1: none of ours (every window here has one).
    const open = now !== null && now.msBeforeNext > 0
    const same =
      typeof endsAt !== 'number' ||
      (open && Math.abs(Date.now() + now.msBeforeNext - endsAt) <= WINDOW_END_SLACK_MS)
    const back = open && same ? Math.min(points, Math.max(0, now.consumedPoints)) : 0
    if (back === 0) return now ?? new RateLimiterRes(this.points, 0, 0, false)
    return super.reward(key, back, options)
  }
}
