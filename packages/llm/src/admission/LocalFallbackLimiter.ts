import { type IRateLimiterOptions, RateLimiterRes } from 'rate-limiter-flexible'
import { MemoryLimiter } from './MemoryLimiter.js'

/**
 * The option a give-back names a request Redis counted with (`true`): it
 * is never given to the local limiter, which never counted it, when Redis
 * fails on the give-back (the library then gives it here).
 */
export const COUNTED_ON_REDIS = 'countedOnRedis'

/**
 * The in-process limiter rate-limiter-flexible falls back to (its
 * `insuranceLimiter`) when Redis fails. It counts its own uses so the
 * owner can say "Redis is down" once, and "back" once, without guessing
 * from errors it never sees (the library swallows them).
 *
 * It also knows which counts it made: the library hands it the options
 * object of the consume it takes over (`countedHere`). A request counted
 * here is given back here (`giveBack`), never to Redis — which never
 * counted it, and lent its window a request (3 admitted of an RPM limit of
 * 2) when a give-back came once Redis was answering again.
 */
export class LocalFallbackLimiter extends MemoryLimiter {
  uses = 0
  readonly #onUse: () => void
  /** The options of the consumes this limiter took over from Redis. */
  readonly #counted = new WeakSet<object>()

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
    this.#told()
    if (typeof options === 'object' && options !== null) this.#counted.add(options)
    return super.consume(key, points, options)
  }

  override reward(
    key: string | number,
    points?: number,
    options?: { [key: string]: unknown },
  ): Promise<RateLimiterRes> {
    this.uses++
    this.#told()
    // Redis counted it: nothing of this window's to give back.
    if (options?.[COUNTED_ON_REDIS] === true) {
      return Promise.resolve(new RateLimiterRes(this.points, 0, 0, false))
    }
    return super.reward(key, points, options)
  }

  /**
   * The owner told, whatever its warning throws: called from inside
   * rate-limiter-flexible's promise chain, a throw there was an unhandled
   * rejection that ended the process, and the count never settled.
   */
  #told(): void {
    try {
      this.#onUse()
    } catch {
      // The count goes on: a warning that failed is no reason to lose it.
    }
  }

  /** This limiter took over the consume made with `options` (it counted it, or refused it). */
  countedHere(options: object): boolean {
    return this.#counted.has(options)
  }

  /**
   * Gives back a request this limiter counted (`countedHere`) — not a use
   * of the fallback: Redis may be answering by now.
   */
  giveBack(
    key: string | number,
    points: number,
    options: { [key: string]: unknown },
  ): Promise<RateLimiterRes> {
    return super.reward(key, points, options)
  }
}
