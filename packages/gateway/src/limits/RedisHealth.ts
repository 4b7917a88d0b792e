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
 * The limits' and cooldowns' flags change only when a command fails or
 * succeeds, which takes a request: read alone, they would go on saying
 * `local-fallback` for a Redis that is back, or `shared` for one that has
 * stopped answering, for as long as traffic is quiet — when an operator
 * checks most. So `check()` asks Redis itself with a PING, every time it
 * is connected. Not the client's 'ready' event: Redis can stop answering and
 * start again on one connection (a pause, a slow fork, a stopped process),
 * with no event; and a PING answered or not is what the next limit command
 * would meet.
 *
 * `state()` is what the last check established, kept current by what needs
 * no round trip: no connection reads `unreachable`, and a PING's answer
 * stops counting once anything newer is known — a command failing after it
 * (`changed()`), the limits moving between Redis and local, the connection
 * lost; an unanswered one also once a command succeeds (`answered()`).
 * Until then an unanswered PING reads `local-fallback` (the next limit
 * command would time out and decide locally), an answered one `shared`.
 */
export class RedisHealth {
  readonly #o: RedisHealthOptions
  /** Bumped by every event that makes an earlier PING's answer old news. */
  #epoch = 0
  /** The last PING's answer and the epoch it was asked in; undefined when none counts now. */
  #pinged: { epoch: number; answered: boolean } | undefined
  #pinging: { epoch: number; answered: Promise<boolean> } | undefined

  constructor(options: RedisHealthOptions) {
    this.#o = options
  }

  /** A limit or cooldown command failed, or the limits changed side: an earlier PING says nothing now. */
  changed(): void {
    this.#epoch++
  }

  /** A cooldown command succeeded: Redis answers, whatever an earlier unanswered PING said. */
  answered(): void {
    if (this.#pinged?.answered === false) this.#pinged = undefined
  }

  /** Where limits and cooldowns are counted, as the last check established it (no round trip). */
  state(): RedisState {
    const flags = this.#flags()
    if (flags !== 'shared' && flags !== 'local-fallback') return flags
    const pinged = this.#pinged
    if (pinged === undefined || pinged.epoch !== this.#epoch) return flags
    return pinged.answered ? 'shared' : 'local-fallback'
  }

  /**
   * Where limits and cooldowns are counted, after a PING whenever Redis is
   * connected (bounded by `timeoutMs`; concurrent checks share one PING).
   * Never rejects. What it returns is what `state()` says from then on,
   * until something changes.
   */
  async check(): Promise<RedisState> {
    const { redis } = this.#o
    const flags = this.#flags()
    if (redis === undefined || (flags !== 'shared' && flags !== 'local-fallback')) return flags
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
    if (epoch === this.#epoch) this.#pinged = { epoch, answered: answer }
    return this.state()
  }

  /** What the connection and the flags say, without a PING. */
  #flags(): RedisState {
    const { redis } = this.#o
    if (redis === undefined) return 'none'
    if (redis.status !== 'ready') {
      // A PING answered on a connection since lost says nothing about the next one.
      this.#pinged = undefined
      return 'unreachable'
    }
    return this.#o.failing() ? 'local-fallback' : 'shared'
  }
}
