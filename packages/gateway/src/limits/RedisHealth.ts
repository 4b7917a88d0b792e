import { outcomeWithin } from '@hourglass/core'
import type { RedisState } from '../http/health.js'
import type { GatewayRedisClient } from './GatewayRedisClient.js'

export interface RedisHealthOptions {
  /** The client limits and cooldowns use; undefined without Redis. */
  redis: GatewayRedisClient | undefined
  /** True while the limits or the cooldowns decide locally: their last Redis command failed. */
  failing(): boolean
  /** The probe's bound, in ms. */
  timeoutMs: number
  /**
   * Keys the probe declares, one under each prefix the limit and cooldown
   * commands write to (one hash tag: one Cluster slot). Redis checks a
   * script's declared keys against the user's ACL: keyless, the probe was
   * taken by a user whose key patterns refuse every limit command (NOPERM),
   * and read `shared` while every instance counted alone.
   */
  probeKeys?: readonly string[] | undefined
}

/**
 * What the probe found: Redis ran a writing script (`writes`: what every
 * limit command needs), refused it or did not answer in time (`refuses`), or
 * answered without saying whether it takes writes (`answers`: a Redis older
 * than 7 cannot compile the script's flags line).
 */
type Verdict = 'writes' | 'refuses' | 'answers'

/**
 * A script with a flags line and no `no-writes` flag: Redis 7 refuses to run
 * it wherever it would refuse the limits' counter script (its writes) —
 * READONLY on a replica, OOM over `maxmemory` with `noeviction`, MISCONF
 * after a failed save — while it still answers a PING. It touches no key.
 */
const WRITE_PROBE = '#!lua\nreturn 1'

/**
 * Where limits and cooldowns are counted (`RedisState`): one check that
 * `/readyz` runs and `gateway.redisState()` reads, so the two say the same.
 *
 * The limits' and cooldowns' flags change only when a command fails or
 * succeeds, which takes a request: read alone, they would go on saying
 * `local-fallback` for a Redis that is back, or `shared` for one that has
 * stopped answering, for as long as traffic is quiet — when an operator
 * checks most. So `check()` asks Redis itself, every time it is connected.
 * Not the client's 'ready' event: Redis can stop answering and start again
 * on one connection (a pause, a slow fork, a stopped process), with no
 * event. And not a PING: a replica after a failover or a Redis out of
 * memory answers PING while refusing every limit command. The probe runs a
 * script Redis treats as writing (`WRITE_PROBE`): taken or not, it is what
 * the next limit command would meet.
 *
 * `state()` is what the last check established, kept current by what needs
 * no round trip: no connection reads `unreachable`, and a probe's answer
 * stops counting once anything newer is known — a command failing after it
 * (`changed()`), the limits moving between Redis and local, the connection
 * lost; a refused or unanswered one also once a command succeeds
 * (`answered()`). Until then a refused or unanswered probe reads
 * `local-fallback` (the next limit command would fail or time out and
 * decide locally), a taken one `shared`. A Redis older than 7 answers the
 * probe without saying whether it takes writes: then the flags decide
 * (shared only while no limit or cooldown command is failing).
 */
export class RedisHealth {
  readonly #o: RedisHealthOptions
  /** Bumped by every event that makes an earlier probe's answer old news. */
  #epoch = 0
  /** The last probe's verdict and the epoch it was asked in; undefined when none counts now. */
  #probed: { epoch: number; verdict: Verdict } | undefined
  #probing: { epoch: number; verdict: Promise<Verdict> } | undefined

  constructor(options: RedisHealthOptions) {
    this.#o = options
  }

  /** A limit or cooldown command failed, or the limits changed side: an earlier probe says nothing now. */
  changed(): void {
    this.#epoch++
  }

  /** A cooldown command succeeded: Redis answers, whatever an earlier unanswered probe said. */
  answered(): void {
    if (this.#probed?.verdict === 'refuses') this.#probed = undefined
  }

  /** Where limits and cooldowns are counted, as the last check established it (no round trip). */
  state(): RedisState {
    const flags = this.#flags()
    if (flags !== 'shared' && flags !== 'local-fallback') return flags
    const probed = this.#probed
    if (probed === undefined || probed.epoch !== this.#epoch || probed.verdict === 'answers') {
      return flags
    }
    return probed.verdict === 'writes' ? 'shared' : 'local-fallback'
  }

  /**
   * Where limits and cooldowns are counted, after a probe whenever Redis is
   * connected (bounded by `timeoutMs`; concurrent checks share one probe).
   * Never rejects. What it returns is what `state()` says from then on,
   * until something changes.
   */
  async check(): Promise<RedisState> {
    const { redis } = this.#o
    const flags = this.#flags()
    if (redis === undefined || (flags !== 'shared' && flags !== 'local-fallback')) return flags
    if (this.#probing === undefined) {
      const probing = {
        epoch: this.#epoch,
        verdict: probeWrites(redis, this.#o.timeoutMs, this.#o.probeKeys ?? []).finally(() => {
          if (this.#probing === probing) this.#probing = undefined
        }),
      }
      this.#probing = probing
    }
    const { epoch, verdict } = this.#probing
    const found = await verdict
    // A command that failed while the probe was out is newer news than its answer.
    if (epoch === this.#epoch) this.#probed = { epoch, verdict: found }
    return this.state()
  }

  /** What the connection and the flags say, without a round trip. */
  #flags(): RedisState {
    const { redis } = this.#o
    if (redis === undefined) return 'none'
    if (redis.status !== 'ready') {
      // A probe answered on a connection since lost says nothing about the next one.
      this.#probed = undefined
      return 'unreachable'
    }
    return this.#o.failing() ? 'local-fallback' : 'shared'
  }
}

/**
 * Runs `WRITE_PROBE`. Never rejects, and bounded by its own timer: a client
 * brought by the caller may have no `commandTimeout`.
 */
async function probeWrites(
  client: GatewayRedisClient,
  timeoutMs: number,
  keys: readonly string[],
): Promise<Verdict> {
  // Called inside a promise: a client of one's own that throws where
  // ioredis rejects (a wrapper failing fast, a test double) is a refused
  // probe too. Thrown out of the wait, it left /readyz unanswered and the
  // rejection unhandled, which ends a Node process.
  const probe = new Promise((resolve) =>
    resolve(client.eval(WRITE_PROBE, keys.length, ...keys)),
  ).then(
    (): Verdict => 'writes',
    (error: unknown): Verdict =>
      // Redis before 7 answers, but cannot compile the flags line.
      error instanceof Error && /compil/i.test(error.message) ? 'answers' : 'refuses',
  )
  // Never rejects: the probe settles into a verdict, or its time runs out.
  const settled = await outcomeWithin(probe, timeoutMs)
  return settled?.ok ? settled.value : 'refuses'
}
