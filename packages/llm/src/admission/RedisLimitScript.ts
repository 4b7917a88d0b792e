import { createHash } from 'node:crypto'
import { type Clock, cutText, messageOf } from '@hourglass/core'
import { answeredWithin } from './answeredWithin.js'
import { canRunScripts, evalScript } from './evalScript.js'
import { firstConnection, sentOnceConnected, stillFirstConnecting } from './firstConnection.js'

/**
 * The part of the caller's Redis client the limits use, typed structurally
 * so @hourglass/llm needs no Redis dependency: an `ioredis` client fits as
 * is. Without `evalsha`/`eval` every count fails and is made locally.
 */
export interface RedisLimitClient {
  /** ioredis's connection state: anything but `ready` counts locally without a round trip. */
  readonly status?: string | undefined
  /**
   * ioredis's: a client made with `lazyConnect: true` (status `wait`) is
   * connected by the first count, once per client (shared with a
   * `RedisCooldownStore` on it).
   */
  connect?(): Promise<unknown>
  /** ioredis's events: a client whose first connection is coming up is waited for until `ready`. */
  once?(event: 'ready' | 'close', listener: () => void): unknown
  removeListener?(event: 'ready' | 'close', listener: () => void): unknown
  evalsha?(sha1: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>
  eval?(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>
}

/**
 * When a count's window ends, epoch ms on Redis's own clock (`TIME` plus
 * the key's PTTL, read by the script that counted): what its give-back
 * names the window by. Not on this process's clock, which may be a
 * `ManualClock`, or stalled between the script and reading its reply.
 */
export interface WindowEnd {
  endMs?: number | undefined
}

/** Says Redis is not to be asked now (rate-limiter-flexible reads anything but `ready` so). */
const BACKING_OFF = 'backing-off'

/**
 * What `ProviderLimits` hands rate-limiter-flexible's `RateLimiterRedis` as
 * its `storeClient`, instead of the caller's client. The library drives an
 * ioredis client through two members only (with a window of whole seconds
 * and nothing but `consume`/`reward`): `status`, and `rlflxIncr`, a command
 * it registers on the client with `defineCommand`. Registered on the
 * caller's client, ours replaced the one of any rate-limiter-flexible
 * limiter of the app on that client, or the app's replaced ours — one name
 * per client, the last one made ran for both. Here `rlflxIncr` is this
 * object's own method, running the script by `EVALSHA` (its body sent once
 * after `NOSCRIPT`): nothing is defined on the caller's client.
 *
 * It also remembers that Redis failed. A frozen Redis (a stopped process, a
 * long fork) keeps the connection `ready` while every command waits for the
 * client's `commandTimeout`; the library asks it again for every count, so
 * every request paid that timeout once per round trip. After a command fails
 * (timed out, connection lost, refused by Redis), `status` reads
 * `backing-off` for `backoffMs`: the library counts locally at once (its
 * `insuranceLimiter`). Then one count tries Redis again, the others still
 * local while it is out; when it is answered the limits are shared again,
 * when it fails the back-off starts over. A client seen reconnecting during
 * the back-off ends it when it is `ready` again: a new connection that
 * Redis answered.
 */
export class RedisLimitScript {
  readonly #client: RedisLimitClient
  readonly #script: string
  readonly #sha: string
  readonly #clock: Clock
  readonly #backoffMs: number
  readonly #timeoutMs: number
  /** On the clock: until when Redis is not asked. -Infinity while nothing has failed. */
  #retryAtMs = Number.NEGATIVE_INFINITY
  /** Failures so far: an answer to a command sent before the latest failure clears nothing. */
  #failures = 0
  /** The client was seen disconnected during a back-off: its next `ready` is a new connection. */
  #seenDown = false
  /** The client was seen `ready`: another state since is a lost connection, not the first one coming up. */
  #wasReady = false
  /** When the next give-back's window ends on Redis (`giveBackTo`), read by the next `rlflxIncr`. */
  #giveBackTo: number | undefined
  /** Where the next count tells when its window ends (`countInto`), taken by the next `rlflxIncr`. */
  #countInto: WindowEnd | undefined
  /** What the last failed command failed with (`why`). */
  #lastFailure: string | undefined

  constructor(
    client: RedisLimitClient,
    script: string,
    backoffMs: number,
    clock: Clock,
    timeoutMs = Number.POSITIVE_INFINITY,
  ) {
    this.#client = client
    this.#script = script
    this.#sha = createHash('sha1').update(script).digest('hex')
    this.#backoffMs = backoffMs
    this.#clock = clock
    this.#timeoutMs = timeoutMs
  }

  /**
   * The client's status, or `backing-off` while a failure's back-off (or
   * the count trying Redis again) lasts. A client still making its first
   * connection reads `ready`: the library (`rejectIfRedisNotReady`) would
   * count locally and warn "Redis unavailable" on a process's first calls
   * made just after `new Redis(url)`; the count waits for the connection,
   * bounded by the command timeout — until such a wait has failed: then the
   * back-off holds, as after any failure.
   */
  get status(): string | undefined {
    const status = this.#client.status
    if (status === 'ready') this.#wasReady = true
    else if (stillFirstConnecting(status, this.#wasReady)) {
      // Waited for until a wait for it has failed; then, as after any
      // failure, one count tries again per back-off. Read as `ready`
      // throughout, a connection that never came up (a Redis frozen or
      // still loading when the process started, a proxy accepting for a
      // backend that is down) cost every request the command timeout.
      if (this.#retryAtMs === Number.NEGATIVE_INFINITY || this.#clock.now() >= this.#retryAtMs) {
        return 'ready'
      }
      // Its `ready`, when it comes, ends the back-off (as a reconnection's does).
      this.#seenDown = true
      return BACKING_OFF
    }
    // The common case first: nothing has failed, no clock read.
    if (this.#retryAtMs === Number.NEGATIVE_INFINITY) return status
    if (status !== undefined && status !== 'ready') {
      this.#seenDown = true
      return status
    }
    if (this.#seenDown) {
      // Reconnected since the failure (ioredis is `ready` once Redis answered
      // on the new connection): no reason to keep waiting for the back-off.
      this.#seenDown = false
      this.#retryAtMs = Number.NEGATIVE_INFINITY
      return status
    }
    return this.#clock.now() < this.#retryAtMs ? BACKING_OFF : status
  }

  /**
   * The give-back about to be made (`reward`, which calls `rlflxIncr`
   * synchronously) is for a count whose window ends at `endMs` on Redis's
   * clock (`WindowEnd`): `LIMIT_SCRIPT` gives back only to that window, not
   * to one started since. Undefined clears it (a give-back that went to the
   * local limiter never called `rlflxIncr`).
   */
  giveBackTo(endMs: number | undefined): void {
    this.#giveBackTo = endMs
  }

  /**
   * The count about to be made (`consume`, which calls `rlflxIncr`
   * synchronously, as `reward` does) tells `slot` when its window ends on
   * Redis's clock, before the consume resolves. Undefined clears it (a
   * count the local limiter made never called `rlflxIncr`: `slot` stays
   * empty).
   */
  countInto(slot: WindowEnd | undefined): void {
    this.#countInto = slot
  }

  /**
   * rate-limiter-flexible's call: `[key, points, windowSeconds, limit,
   * duration]`, answered `[count, pttl, end]`: its own command's answer
   * (the library reads the first two only), and when the window ends.
   */
  async rlflxIncr(given: readonly string[]): Promise<unknown> {
    const end = this.#giveBackTo
    this.#giveBackTo = undefined
    const slot = this.#countInto
    this.#countInto = undefined
    const args =
      end !== undefined && Number.isFinite(end) && Number(given[1]) < 0
        ? [...given, String(Math.round(end))]
        : given
    const failures = this.#failures
    if (this.#retryAtMs !== Number.NEGATIVE_INFINITY) {
      // This count tries Redis again: the others stay local until it is answered.
      this.#retryAtMs = this.#clock.now() + this.#backoffMs
    }
    try {
      // Bounded: a frozen Redis fails the count (the local limiter decides) instead of holding it.
      const reply = await this.#run(args, (command) =>
        answeredWithin(
          command,
          this.#timeoutMs,
          'Redis',
          'ProviderLimits redisCommandTimeoutMs',
          this.#clock,
        ),
      )
      if (failures === this.#failures) this.#retryAtMs = Number.NEGATIVE_INFINITY
      // A reply without it (a client or proxy of its own): no end known,
      // the give-back goes to the key's window as it stands.
      const endMs = Array.isArray(reply) ? Number(reply[2]) : Number.NaN
      if (slot !== undefined && Number.isFinite(endMs)) slot.endMs = endMs
      return reply
    } catch (error) {
      this.#failures++
      this.#retryAtMs = this.#clock.now() + this.#backoffMs
      this.#lastFailure = messageOf(error)
      throw error
    }
  }

  /**
   * Why counts are made locally, for the warning that says so: the client's
   * state when it is not connected (read without `status`'s bookkeeping),
   * else what the last command failed with — a read-only replica after a
   * failover, an ACL without `EVALSHA`, a command timeout —, on one line of
   * at most 200 characters. Said only "Redis unavailable", a fleet whose
   * Redis was up, reachable and refusing every count ran on its local
   * shares for good with nothing in the log to say why.
   */
  why(): string | undefined {
    const status = this.#client.status
    const reason =
      status !== undefined && status !== 'ready' && !stillFirstConnecting(status, this.#wasReady)
        ? `the client is ${status}`
        : this.#lastFailure
    return reason === undefined ? undefined : cutText(reason.replace(/\s+/g, ' ').trim(), 200)
  }

  /** The script with `args`, bounded by `bound` (the command timeout). */
  #run(
    args: readonly string[],
    bound: (command: Promise<unknown>) => Promise<unknown>,
  ): Promise<unknown> {
    const client = this.#client
    if (!canRunScripts(client)) {
      return Promise.reject(new TypeError('ProviderLimits: the redis client has no evalsha/eval'))
    }
    // Its first connection still coming up (`status` read it as `ready`):
    // connected (lazyConnect) or waited for. Sent now, a client without an
    // offline queue refused it, and the first counts of every process were
    // made locally, "Redis unavailable" said. Timed out meanwhile (counted
    // by the local limiter), it is not sent once the connection is up.
    const connected = stillFirstConnecting(client.status, this.#wasReady)
      ? firstConnection(client)
      : undefined
    return evalScript(
      client,
      this.#sha,
      this.#script,
      1,
      args,
      (send) => sentOnceConnected(connected, send, bound),
      bound,
    )
  }
}
