import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible'

/**
 * rate-limiter-flexible's in-memory limiter with the contract of
 * `LIMIT_SCRIPT` (ProviderLimits.ts): a refused consume counts nothing.
 * Its count is taken back before the refusal is seen, so nobody has to give
 * points back later — a give-back that could land in the next window.
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
}
