import { RateLimiterRes } from 'rate-limiter-flexible'
import { LocalFallbackLimiter } from './LocalFallbackLimiter.js'

/**
 * The local fallback of a TPM limit shared through Redis: this process's
 * share, `floor(limit / instances)`. A request weighing more than the share
 * fits none of its windows, so its refusal says Infinity (no wait helps
 * while Redis is down) instead of the next reset — a Retry-After that could
 * never come true, and that admission would wait out window after window
 * until the deadline. Refused rather than let through on an empty window:
 * admitting it would let the fleet take up to `instances × limit` tokens in
 * a window, past the documented `instances × floor(limit / instances)`.
 */
export class LocalShareLimiter extends LocalFallbackLimiter {
  override async consume(
    key: string | number,
    points = 1,
    options: { [key: string]: unknown } = {},
  ): Promise<RateLimiterRes> {
    try {
      return await super.consume(key, points, options)
    } catch (refused) {
      if (!(refused instanceof RateLimiterRes) || points <= this.points) throw refused
      throw new RateLimiterRes(
        refused.remainingPoints,
        Number.POSITIVE_INFINITY,
        refused.consumedPoints,
        false,
      )
    }
  }
}
