import type { IRateLimiterOptions, RateLimiterRes } from 'rate-limiter-flexible'
import { MemoryLimiter } from './MemoryLimiter.js'

/**
 * The in-process limiter rate-limiter-flexible falls back to (its
 * `insuranceLimiter`) when Redis fails. It counts its own uses so the
 * owner can say "Redis is down" once, and "back" once, without guessing
 * from errors it never sees (the library swallows them).
 */
export class LocalFallbackLimiter extends MemoryLimiter {
  uses = 0
  readonly #onUse: () => void

  constructor(options: IRateLimiterOptions, onUse: () => void) {
    super(options)
    this.#onUse = onUse
  }

  override consume(
    key: string | number,
    points?: number,
    options?: { [key: string]: unknown },
  ): Promise<RateLimiterRes> {
    this.uses++
    this.#onUse()
    return super.consume(key, points, options)
  }

  override reward(
    key: string | number,
    points?: number,
    options?: { [key: string]: unknown },
  ): Promise<RateLimiterRes> {
    this.uses++
    this.#onUse()
    return super.reward(key, points, options)
  }
}
