import type { Redis } from 'ioredis'
import type { RedisState } from '../http/health.js'
import { answersPing } from '../redisClient.js'

export interface RedisHealthOptions {
  /** The client limits and cooldowns use; undefined without Redis. */
  redis: Redis | undefined
  /** True while the limits or the cooldowns decide locally: their last Redis command failed. */
  failing(): boolean
  /** The PING's bound, in ms. */
  timeoutMs: number
}

/**
 * Where limits and cooldowns are counted (`RedisState`): one check that
 * `/readyz` runs and `gateway.redisState()` reads, so the two say the same.
 *
 * The limits' and cooldowns' flags clear only when their next command
 * succeeds, which takes a request: read alone, they would go on saying
 * `local-fallback` for a Redis that is back for as long as traffic is quiet
 * — when an operator checks most. So `check()` puts a raised flag to a PING,
 * every time. Not the client's 'ready' event: Redis can stop answering and
 * start again on one connection (a pause, a slow fork), with no event; and
 * a PING answered is what the next limit command would meet.
 *
 * `state()` is what the last check established, kept current by what needs
 * no round trip: no connection reads `unreachable`, flags that are down
 * `shared`, and a PING's answer stops counting once anything newer is known
 * — a command failing after it (`changed()`), the limits moving between
 * Redis and local, the connection lost.
 */
export class RedisHealth {
  readonly #o: RedisHealthOptions
  /** Bumped by every event that makes an earlier PING's answer old news. */
  #epoch = 0
  /** The epoch in which a PING was last answered; -1 when none counts now. */
  #answeredIn = -1
  #pinging: { epoch: number; answered: Promise<boolean> } | undefined

  constructor(options: RedisHealthOptions) {
    this.#o = options
  }

  /** A limit or cooldown command failed, or the limits changed side: an earlier PING says nothing now. */
  changed(): void {
    this.#epoch++
  }

  /** Where limits and cooldowns are counted, as the last check established it (no round trip). */
  state(): RedisState {
    const flags = this.#flags()
    return flags === 'local-fallback' && this.#answeredIn === this.#epoch ? 'shared' : flags
  }

  /**
   * Where limits and cooldowns are counted, after a PING when the flags say
   * `local-fallback` (bounded by `timeoutMs`; concurrent checks share one
   * PING). Never rejects. What it returns is what `state()` says from then
   * on, until something changes.
   */
  async check(): Promise<RedisState> {
    const { redis } = this.#o
    if (this.#flags() !== 'local-fallback' || redis === undefined) return this.state()
    if (this.#pinging === undefined) {
      const pinging = {
        epoch: this.#epoch,
        answered: answersPing(redis, this.#o.timeoutMs).finally(() => {
          if (this.#pinging === pinging) this.#pinging = undefined
        }),
      }
      this.#pinging = pinging
    }
    const { epoch, answered } = this.#pinging
    const answer = await answered
    // A command that failed while the PING was out is newer news than its answer.
    if (epoch === this.#epoch) this.#answeredIn = answer ? epoch : -1
    return this.state()
  }

  /** What the connection and the flags say, without a PING. */
  #flags(): RedisState {
    const { redis } = this.#o
    if (redis === undefined) return 'none'
    if (redis.status !== 'ready') {
      // A PING answered on a connection since lost says nothing about the next one.
      this.#answeredIn = -1
      return 'unreachable'
    }
    return this.#o.failing() ? 'local-fallback' : 'shared'
  }
}
