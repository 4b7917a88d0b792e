import {
  type Clock,
  currentDeadline,
  type Deadline,
  enforcedRemaining,
  MAX_TIMER_MS,
  optionError,
  quoted,
  refuseUnknownOptions,
} from '@hourglass/core'
import { type RateLimiterAbstract, RateLimiterRedis } from 'rate-limiter-flexible'
import { infoSafely, warnSafely } from '../callHook.js'
import { clockOption } from '../clockOption.js'
import type { OverLimit } from '../types.js'
import { COUNTED_ON_REDIS, LocalFallbackLimiter } from './LocalFallbackLimiter.js'
import { LocalShareLimiter } from './LocalShareLimiter.js'
import { COUNTED_WINDOW_END, MemoryLimiter } from './MemoryLimiter.js'
import { type RedisLimitClient, RedisLimitScript, type WindowEnd } from './RedisLimitScript.js'

export type { RedisLimitClient } from './RedisLimitScript.js'

/**
 * The longest `windowMs`: whole seconds (rate-limiter-flexible counts in
 * seconds) within a Node timer's reach (core's `MAX_TIMER_MS`, 2^31 - 1 ms),
 * so 2 147 483 000 ms, 24.8 days. The gateway's config refuses a longer one
 * at its field by the same figure.
 */
export const MAX_LIMIT_WINDOW_MS = Math.floor(MAX_TIMER_MS / 1000) * 1000

/** One provider's limits per window. Absent or 0 = unlimited. */
export interface ProviderLimit {
  /** Requests per window (per minute with the default window). */
  rpm?: number | undefined
  /** Tokens per window: each request consumes its estimated tokens. */
  tpm?: number | undefined
}

export interface ProviderLimitsOptions {
  /** Limits by provider name. A provider not listed is not limited. */
  limits: Readonly<Record<string, ProviderLimit>>
  /**
   * The window the limits count over, in ms: whole seconds, from 1000 to
   * core's `MAX_TIMER_MS` (2^31 - 1, so 2 147 483 000: 24.8 days). Default 60 000.
   */
  windowMs?: number | undefined
  /** Share the counts through this Redis (every process on it enforces one limit). Default: memory. */
  redis?: RedisLimitClient | undefined
  /** Prefix of every counter key. Default `hourglass:limits`. */
  keyPrefix?: string | undefined
  /** Processes sharing the limit: while Redis is down each enforces `limit / instances` locally. Default 1. */
  instances?: number | undefined
  /**
   * After a Redis command fails (times out, the connection is lost, Redis
   * refuses it), count locally for this long, in ms, then let one request
   * try Redis again (the others stay local until it is answered). A frozen
   * Redis then costs one command timeout per back-off, not one per request.
   * 0 asks Redis for every count. Default 1000.
   */
  redisBackoffMs?: number | undefined
  /**
   * How long a count may wait for Redis before it fails (and the local
   * limiter decides, backing off as above), in ms, whatever the client's
   * own `commandTimeout`: a frozen Redis (connected, `ready`, answering
   * nothing) held every count — and a call with no deadline for good.
   * Default 1000; `Infinity` = wait for the client.
   */
  redisCommandTimeoutMs?: number | undefined
  /**
   * Time source of `redisBackoffMs`, `redisCommandTimeoutMs` and of how long
   * a window last seen full has left (what `Admission.forecast` reads).
   * Default (none, or `null`) `systemClock`.
   */
  clock?: Clock | undefined
  /** Told once when Redis fails (`warn`) and once when it is back (`info`, or `warn` for a logger without one). Default `console`. */
  logger?:
    | { warn(message: string): void; info?: ((message: string) => void) | undefined }
    | undefined
  /** Called when admission is about to wait for a window to reset (metrics). */
  onWait?: ((provider: string, limit: 'rpm' | 'tpm', waitMs: number) => void) | undefined
}

export interface LimitOptions {
  /** What `fitsDeadline` is measured against. Default `currentDeadline()`; none = every finite reset fits. */
  deadline?: Deadline | undefined
  /** Time the request needs after admission, in ms: the reset must leave it. Default 0. */
  neededMs?: number | undefined
}

export type LimitDecision =
  | { admitted: true }
  | {
      admitted: false
      limit: 'rpm' | 'tpm'
      /**
       * Until the window resets, in ms. Infinity: the request alone exceeds the
       * TPM limit, or, while Redis is down, this process's share of it
       * (`floor(tpm / instances)`).
       */
      retryAfterMs: number
      /** Wall-clock epoch ms of the reset. */
      retryAtMs: number
      /** The reset comes early enough for the request to still finish before its deadline. */
      fitsDeadline: boolean
      /**
       * Why no wait helps, when `retryAfterMs` is Infinity: which limit the
       * request alone exceeds, with both numbers — the TPM limit, or, while
       * Redis is unavailable, this process's share of it.
       */
      reason?: string | undefined
      /**
       * The request alone exceeds the whole TPM limit: no window, and no
       * Redis coming back, ever admits it (a bigger request than this
       * process's share while Redis is down is not: that share grows back).
       */
      tooLarge?: true | undefined
      /** With `tooLarge`: the TPM limit and the request's weight, in tokens. */
      overLimit?: OverLimit | undefined
    }

/**
 * `LimitDecision` as `Admission` takes it: an admitted request may give back
 * what it counted (the request, its tokens) when it is not sent after all —
 * its call ended while the count's round trip was in flight, or the cooldown
 * gate closed meanwhile. Only to the window the count went to; once; never
 * rejects. @internal
 */
export type CountedDecision =
  | (Exclude<LimitDecision, { admitted: true }> & {
      /**
       * The give-backs to the limit that refused it (`limit`) this refusal
       * has seen (`onRoom`): one made since — room before the reset — wakes
       * a wait for the reset at once.
       */
      roomSeen?: number | undefined
    })
  | { admitted: true; giveBack?: (() => Promise<void>) | undefined }

interface Pair {
  rpm: RateLimiterAbstract | undefined
  tpm: RateLimiterAbstract | undefined
  tpmPoints: number
  /** What this process allows of `tpmPoints` while Redis is down. */
  tpmShare: number
  /** Give-backs made so far, per limit: what a refusal saw (`CountedDecision.roomSeen`). */
  readonly givenBack: Record<Dimension, number>
  /** Admission's waits for each limit's reset, woken by a give-back to that limit (`onRoom`). */
  readonly waiting: Record<Dimension, Set<() => void>>
}

/** The two limits a provider may have. */
type Dimension = 'rpm' | 'tpm'

/**
 * The counter script the Redis limiters run instead of rate-limiter-flexible's
 * own (ARGV: points, window in s, limit). Its script counts a refused
 * request and leaves it to be given back by a second round trip; when the
 * window ends between the two, the give-back starts the next window below
 * zero — every refusal in flight at a reset admits one more request in the
 * next window, across the whole fleet (measured: 47 requests in one 1 s
 * window of an RPM limit of 5, three processes hammering). Here a refused
 * consume counts nothing, and a give-back (negative points, the request
 * count of a request the TPM limit refused) only goes to a window that
 * still exists — the one its count saw (ARGV[5], when that window ends on
 * Redis's clock, the count's third answer), not one another process
 * started since — never below zero.
 */
export const LIMIT_SCRIPT = `
-- When the key's window ends, epoch ms on Redis's own clock: what a
-- give-back names its window by. TIME in a script that writes is
-- replicated by its effects (Redis 5 and later).
local function ends(ttl)
  local now = redis.call('time')
  return tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + ttl
end
local points = tonumber(ARGV[1])
if points < 0 then
  local current = tonumber(redis.call('get', KEYS[1]))
  if current == nil then return {0, 0} end
  -- ARGV[5]: when the request's window ends (its count's third answer). A
  -- window another process started since, the count's having expired,
  -- ends a whole window later at least: not the one to give to, however
  -- far into it. PTTL is whole ms: 3 ms of slack.
  if ARGV[5] and math.abs(ends(redis.call('pttl', KEYS[1])) - tonumber(ARGV[5])) > 3 then
    return {current, redis.call('pttl', KEYS[1])}
  end
  local back = math.min(-points, math.max(current, 0))
  -- Nothing to give back (a window at 0): Lua's -0 goes out as "-0", which INCRBY refuses.
  if back == 0 then return {current, redis.call('pttl', KEYS[1])} end
  return {redis.call('incrby', KEYS[1], -back), redis.call('pttl', KEYS[1])}
end
redis.call('set', KEYS[1], 0, 'EX', ARGV[2], 'NX')
local ttl = redis.call('pttl', KEYS[1])
local window = 1000 * tonumber(ARGV[2])
-- No window outlasts the window, and none counts below zero: a counter
-- kept without expiry, set by hand, or tampered with (a count over the
-- limit that expires in 31,700 years refused every request of the fleet
-- for good; a negative one admitted every request) lasts a window at most.
if ttl == -1 or ttl > window then
  redis.call('pexpire', KEYS[1], window)
  ttl = window
end
local raw = redis.call('get', KEYS[1])
local current = tonumber(raw)
-- Not a whole count from 0 to 2^53 written as INCRBY reads one (text, a
-- fraction, a negative or a huge number, '01', '0x1', '1e0', '-0': set by
-- hand or tampered with): counted from 0 again. Text failed the script
-- (every instance on its local share), a fraction or a non-canonical
-- spelling failed INCRBY, and a count past 2^63 went out as a negative
-- number: room, for the window.
if current == nil or current >= 9007199254740992 or not (raw == '0' or string.find(raw, '^[1-9]%d*$')) then
  redis.call('set', KEYS[1], 0, 'PX', math.max(ttl, 1))
  current = 0
end
if current + points > tonumber(ARGV[3]) then return {current + points, ttl} end
return {redis.call('incrby', KEYS[1], points), ttl, ends(ttl)}
`

const ADMITTED: { readonly admitted: true } = Object.freeze({ admitted: true })

/** Every option the constructor reads (the type checker keeps the list whole). */
const OPTION_NAMES = Object.keys({
  limits: true,
  windowMs: true,
  redis: true,
  keyPrefix: true,
  instances: true,
  redisBackoffMs: true,
  redisCommandTimeoutMs: true,
  clock: true,
  logger: true,
  onWait: true,
} satisfies Record<keyof ProviderLimitsOptions, true>)

/** Every field of one provider's limit. */
const LIMIT_NAMES = Object.keys({ rpm: true, tpm: true } satisfies Record<
  keyof ProviderLimit,
  true
>)

/** The RPM/TPM window when `windowMs` is left out: a minute, as the limits' names say. */
const DEFAULT_WINDOW_MS = 60_000

/**
 * Per-provider RPM and TPM limits, isolated (one provider's spent limit
 * never refuses another's requests), counted in memory or in Redis through
 * rate-limiter-flexible — fixed windows, incremented atomically by
 * `LIMIT_SCRIPT`, so a fleet of processes admits at most the limit per
 * window between them. When Redis fails, each process falls back to a local
 * limiter of `limit / instances` and says so once; after a failed command
 * it stays local for `redisBackoffMs` before one request tries Redis again.
 *
 * Pass it to `new Admission({ limits })`: `Admission.acquire` takes a
 * request's share after the cooldown gate, waits for a reset that fits the
 * deadline and refuses the rest with a `RateLimitedError` — one gate, one
 * wait, one error for every reason a provider cannot take a request now.
 */
export class ProviderLimits {
  readonly #pairs = new Map<string, Pair>()
  /** The local limiter of each Redis limiter: what a count it took over is given back to. */
  readonly #locals = new Map<RateLimiterAbstract, LocalFallbackLimiter>()
  /** The caller's client behind what rate-limiter-flexible is given (`RedisLimitScript`). */
  readonly #redis: RedisLimitScript | undefined
  readonly #instances: number
  readonly #logger: { warn(message: string): void; info?: ((message: string) => void) | undefined }
  /** @internal Admission tells it before waiting for a reset. */
  readonly onWait: ProviderLimitsOptions['onWait']
  #fallbackUses = 0
  #degraded = false
  readonly #clock: Clock
  /**
   * Per provider: when (on `#clock`) the window its last count found full
   * frees — a refusal's reset, or the reset of the RPM window the count
   * took the last request of. What `fullForMs` tells `Admission.forecast`
   * without a round trip; a later count admitted with room left clears it.
   */
  readonly #fullUntil = new Map<string, number>()
  /**
   * Give-backs of counts Redis made, come while Redis is not asked (the
   * back-off after a failed command, a lost connection): sent once a count
   * finds it asked again. Handed to the local share as the library does,
   * they gave nothing back (it never counted them), and each request
   * released unsent in a one-second back-off held the fleet's window until
   * it ended. Late is safe: the script gives only to the window that
   * counted the request, never to one started since. At most
   * `MAX_HELD_GIVE_BACKS`; one whose window has ended is dropped.
   */
  readonly #held: HeldGiveBack[] = []

  /** @internal True when the counters live in Redis: a round trip that may never answer. */
  get remote(): boolean {
    return this.#redis !== undefined
  }

  constructor(options: ProviderLimitsOptions) {
    // Read whole below: none (`new ProviderLimits({})`) failed as "Cannot
    // convert undefined or null to object", a null entry as "Cannot read
    // properties of null".
    if (typeof options !== 'object' || options === null) {
      throw optionError('ProviderLimits: options', 'an object ({ limits, redis, … })', options)
    }
    // Ignored, `windowMS` left the one-minute window in force, and a
    // misspelled limit (`tpM`) left the provider without it.
    refuseUnknownOptions(options, OPTION_NAMES, 'new ProviderLimits()')
    const { limits } = options
    if (typeof limits !== 'object' || limits === null || Array.isArray(limits)) {
      throw optionError(
        'ProviderLimits: limits',
        'an object of provider name → { rpm, tpm } ({ openai: { rpm: 500 } })',
        limits,
      )
    }
    for (const [provider, limit] of Object.entries(limits)) {
      if (typeof limit !== 'object' || limit === null || Array.isArray(limit)) {
        throw optionError(
          `ProviderLimits: limits[${quoted(provider, 40)}]`,
          'an object { rpm, tpm }',
          limit,
        )
      }
      refuseUnknownOptions(limit, LIMIT_NAMES, `ProviderLimits: limits[${quoted(provider, 40)}]`, {
        what: 'field',
      })
    }
    const windowMs = options.windowMs ?? DEFAULT_WINDOW_MS
    // At most a Node timer's reach: the memory store (and the local fallback
    // while Redis is down) ends each window with a timer, which Node fires
    // after 1 ms when longer — a 30-day window with `rpm: 1` admitted every
    // request. The gateway's config takes the same bound.
    if (
      typeof windowMs !== 'number' ||
      !Number.isInteger(windowMs / 1000) ||
      windowMs < 1000 ||
      windowMs > MAX_LIMIT_WINDOW_MS
    ) {
      throw optionError(
        'windowMs',
        `whole seconds from 1000 to ${MAX_LIMIT_WINDOW_MS} ms (24.8 days, the longest a Node timer waits)`,
        windowMs,
      )
    }
    // A whole number ≥ 1, as the gateway's config demands: NaN would make
    // the local fallback's limit NaN (nothing limited while Redis is down),
    // and 0, 0.5 or 2.5 were read as 1 or 2 without a word — a fleet size
    // mistyped is a share of the limit nobody asked for.
    const givenInstances = options.instances ?? undefined
    if (
      givenInstances !== undefined &&
      (typeof givenInstances !== 'number' ||
        !Number.isInteger(givenInstances) ||
        givenInstances < 1)
    ) {
      throw optionError('instances', 'a whole number ≥ 1', givenInstances)
    }
    const instances = givenInstances ?? 1
    const backoffMs = options.redisBackoffMs ?? 1000
    if (typeof backoffMs !== 'number' || !(backoffMs >= 0) || !Number.isFinite(backoffMs)) {
      throw optionError('redisBackoffMs', 'a number of ms ≥ 0', backoffMs)
    }
    const commandTimeoutMs = options.redisCommandTimeoutMs ?? 1000
    if (typeof commandTimeoutMs !== 'number' || !(commandTimeoutMs > 0)) {
      throw optionError(
        'redisCommandTimeoutMs',
        'a number of ms above 0 (Infinity = none)',
        commandTimeoutMs,
      )
    }
    // Through the one rule of every clock option: `null` refused here alone
    // ("clock must be a Clock …, got null") where Admission, the stores and
    // core's Deadline read it as none, the system clock.
    const clock = clockOption('ProviderLimits', options.clock)
    const prefix = options.keyPrefix ?? 'hourglass:limits'
    // `null` is none, as for every other option here (memory limits): read
    // as a client, the first count's fallback read `null.status` inside
    // rate-limiter-flexible's promise chain — an unhandled rejection that
    // ended the process, the count never settling. A URL string or a
    // number is no client: refused, as `RedisCooldownStore` refuses it.
    const redis = options.redis ?? undefined
    if (redis !== undefined && typeof redis !== 'object') {
      throw optionError(
        'ProviderLimits: redis',
        'a Redis client (an ioredis Redis or Cluster: status, evalsha, eval), or none for in-memory limits',
        redis,
      )
    }
    this.#instances = instances
    this.#clock = clock
    this.#redis =
      redis === undefined
        ? undefined
        : new RedisLimitScript(redis, LIMIT_SCRIPT, backoffMs, this.#clock, commandTimeoutMs)
    this.#logger = options.logger ?? console
    this.onWait = options.onWait
    const make = (dimension: 'rpm' | 'tpm', points: number | undefined) => {
      if (points === undefined || points === 0) return undefined
      if (!Number.isInteger(points) || points < 0) {
        throw optionError(dimension, 'a whole number of at least 0', points)
      }
      // A key of its own per window length (the default's keeps its name):
      // instances whose windowMs differ (a rolling deploy that changes it)
      // counted in one key, whose window was whichever made it — the shorter
      // one cut the longer short, and the longer's limit was admitted per the
      // shorter window.
      const keyPrefix =
        windowMs === DEFAULT_WINDOW_MS
          ? `${prefix}:${dimension}`
          : `${prefix}:${dimension}@${windowMs / 1000}s`
      const base = { points, duration: windowMs / 1000, keyPrefix }
      const redis = this.#redis
      if (redis === undefined) return new MemoryLimiter(base)
      // TPM's refuses a request larger than the share for as long as it decides (Infinity).
      const Local = dimension === 'tpm' ? LocalShareLimiter : LocalFallbackLimiter
      const local = new Local(
        { ...base, points: share(points, instances), keyPrefix: `${base.keyPrefix}:local` },
        () => this.#onFallback(),
      )
      const limiter = new RateLimiterRedis({
        ...base,
        // Not the caller's client: the library would define its `rlflxIncr`
        // command on it, the same name an app's own rate-limiter-flexible
        // limiters on that client use (RedisLimitScript runs LIMIT_SCRIPT).
        storeClient: redis,
        // Fail over at once instead of queueing behind a reconnecting client
        // (or, after a failure, a Redis that may still be frozen).
        rejectIfRedisNotReady: true,
        insuranceLimiter: local,
      })
      this.#locals.set(limiter, local)
      return limiter
    }
    for (const [provider, limit] of Object.entries(limits)) {
      const tpm = make('tpm', limit.tpm)
      this.#pairs.set(provider, {
        rpm: make('rpm', limit.rpm),
        tpm,
        tpmPoints: limit.tpm ?? 0,
        tpmShare: tpm === undefined ? 0 : share(limit.tpm ?? 0, instances),
        givenBack: { rpm: 0, tpm: 0 },
        waiting: { rpm: new Set(), tpm: new Set() },
      })
    }
  }

  /** True while Redis is failing and the local limiters decide. */
  get degraded(): boolean {
    return this.#degraded
  }

  /**
   * ms until `provider`'s window frees, when its last count found it full
   * (refused, or took its last request); 0 when none is known full. This
   * process's knowledge only, no round trip: what `Admission.forecast` adds
   * to a model's wait. Unknown to it, a fallback whose window was spent was
   * "expected to answer at once", and a call left a primary cooling for
   * 200 ms to wait seconds on that fallback. @internal
   */
  fullForMs(provider: string): number {
    const until = this.#fullUntil.get(provider)
    if (until === undefined) return 0
    const left = until - this.#clock.now()
    if (left > 0) return left
    this.#fullUntil.delete(provider)
    return 0
  }

  /**
   * Wakes `wake` when `provider`'s `limit` gets room back before its reset:
   * a count given back to it in this process (a request not sent, or, for
   * RPM, the count of a request its TPM limit refused) since the refusal
   * that saw `roomSeen` — at once when one was made in between. Returns the
   * unsubscribe. Admission's wait for a reset listens here: without it, the
   * callers waiting for a window stayed asleep until its reset (up to the
   * whole window) while the request that spent it gave it back unsent.
   * Only that limit's give-backs: woken by any, two callers waiting for a
   * TPM reset woke each other without end (each one's count gave its RPM
   * count back when TPM refused it again), ~90,000 counts in 2 s with no
   * turn of the event loop. Another process's give-back is not heard (it
   * reaches Redis only): its room is found at the reset. @internal
   */
  onRoom(
    provider: string,
    limit: Dimension,
    wake: () => void,
    roomSeen: number | undefined,
  ): () => void {
    const pair = this.#pairs.get(provider)
    if (pair === undefined) return noop
    const waiting = pair.waiting[limit]
    waiting.add(wake)
    if (roomSeen !== undefined && pair.givenBack[limit] !== roomSeen) wake()
    return () => {
      waiting.delete(wake)
    }
  }

  /**
   * A count of `pair`'s `limit` is back: the waits for its reset look again
   * — for RPM the first in line only, as a give-back is one request: woken
   * all, every waiter counted again, the one that took it and was refused
   * by TPM gave it back, and the rest counted again, ~N²/2 counts for N
   * waiters (45,000 for 300, the loop never turning). The first one woken
   * passes it on so (its own RPM give-back when TPM refuses it), one count
   * each. A TPM give-back is some tokens, for any number of requests:
   * every TPM waiter looks (none of them gives TPM back when refused).
   */
  #roomMade(pair: Pair, limit: Dimension): void {
    pair.givenBack[limit]++
    const waiting = pair.waiting[limit]
    if (limit === 'rpm') waiting.values().next().value?.()
    else for (const wake of [...waiting]) wake()
  }

  /**
   * Wakes the first caller waiting for `provider`'s RPM reset: room for one
   * request, handed on by a caller woken for it that will not count again
   * (Admission: its key now cooling, its call ended) — kept, every other
   * waiter slept until the reset beside that room. @internal
   */
  passOn(provider: string): void {
    this.#pairs.get(provider)?.waiting.rpm.values().next().value?.()
  }

  /** Remembers (`fullForMs`) that `provider`'s window is full for `ms` more, or, undefined, that it has room. */
  #full(provider: string, ms: number | undefined): void {
    if (ms === undefined || !(ms > 0) || !Number.isFinite(ms)) this.#fullUntil.delete(provider)
    else this.#fullUntil.set(provider, this.#clock.now() + ms)
  }

  /**
   * Take one request and `tokens` tokens from `provider`'s limits, or say
   * how long until they reset (and whether that fits the deadline). Never
   * waits. A refused request consumes nothing.
   */
  async tryAcquire(
    provider: string,
    /** The request's weight, or a function computing it: called only when the provider has a TPM limit. */
    tokens: number | (() => number),
    options: LimitOptions = {},
  ): Promise<LimitDecision> {
    const decision = await this.count(provider, tokens, options)
    if (decision.admitted) return ADMITTED
    const { roomSeen: _, ...refused } = decision
    return refused
  }

  /** `tryAcquire`, with the give-back of what an admitted request counted (`CountedDecision`). @internal */
  async count(
    provider: string,
    tokens: number | (() => number),
    options: LimitOptions = {},
  ): Promise<CountedDecision> {
    const pair = this.#pairs.get(provider)
    if (!pair) return ADMITTED
    const deadline = options.deadline ?? currentDeadline()
    // Checked up front, read again when a refusal is decided (below): a
    // deadline that is no Deadline was a TypeError only once the window
    // was full — under load, from a method that never throws for a full limit.
    enforcedRemaining(deadline)
    const neededMs = options.neededMs ?? 0
    const given = pair.tpm ? (typeof tokens === 'function' ? tokens() : tokens) : 0
    // A NaN weight compared false with the limit and was never consumed: the
    // request went out free of the TPM limit. Refused, like any NaN count.
    if (typeof given !== 'number' || Number.isNaN(given)) {
      throw new RangeError(
        `ProviderLimits: tokens must be a number ≥ 0, got ${typeof given === 'number' ? 'NaN' : typeof given}`,
      )
    }
    const weight = Math.max(0, Math.ceil(given))
    // Read before counting: a give-back that lands while the count is in
    // flight (after the window refused it) wakes its wait at once.
    const seen = { ...pair.givenBack }
    const refuse = (
      limit: 'rpm' | 'tpm',
      retryAfterMs: number,
      reason?: string,
    ): Exclude<CountedDecision, { admitted: true }> => ({
      admitted: false,
      limit,
      retryAfterMs,
      retryAtMs: Date.now() + retryAfterMs,
      // What is left now, not when the count began: a count that waited
      // out `redisCommandTimeoutMs` on a frozen Redis said a reset 10 s away
      // fitted the 9 s left of 11 s, and admission waited for it until the
      // call's deadline instead of refusing (its fallback at once).
      fitsDeadline:
        Number.isFinite(retryAfterMs) && retryAfterMs + neededMs <= enforcedRemaining(deadline),
      ...(reason === undefined ? {} : { reason }),
      roomSeen: seen[limit],
    })
    if (pair.tpm && weight > pair.tpmPoints) {
      return Object.assign(
        refuse(
          'tpm',
          Number.POSITIVE_INFINITY,
          `the request alone (${weight} tokens) exceeds the TPM limit (${pair.tpmPoints} tokens)`,
        ),
        {
          tooLarge: true as const,
          overLimit: { limit: 'TPM', limitTokens: pair.tpmPoints, requestedTokens: weight },
        },
      )
    }
    const usesBefore = this.#fallbackUses
    try {
      // When the RPM count's window ends: a give-back goes to that window only.
      let rpmWindow: CountedWindow | undefined
      // The RPM window this count took the last request of: full until it ends.
      let rpmFullMs: number | undefined
      if (pair.rpm) {
        const refused = await this.#take(pair.rpm, provider, 1, (window, left) => {
          rpmWindow = window
          if (left <= 0) rpmFullMs = window.ms
        })
        if (refused !== undefined) {
          this.#full(provider, refused)
          return refuse('rpm', refused)
        }
      }
      let tpmWindow: CountedWindow | undefined
      if (pair.tpm && weight > 0) {
        const refused = await this.#take(pair.tpm, provider, weight, (window) => {
          tpmWindow = window
        })
        if (refused !== undefined) {
          // The request is not going: give back the request it was counted
          // as — to its own window. Given to a window another process had
          // started since (the count's had ended meanwhile), it lent that
          // window one more request than the limit.
          if (pair.rpm) {
            await this.#reward(pair.rpm, provider, 1, rpmWindow)
            // Callers its RPM count refused meanwhile wait no longer; those
            // waiting for TPM (this one too) gained nothing from it.
            this.#roomMade(pair, 'rpm')
          }
          // A share too small for this request (Infinity) says nothing of the window.
          if (Number.isFinite(refused)) this.#full(provider, refused)
          // Only the local share refuses for good (LocalShareLimiter): the whole limit was checked above.
          return Number.isFinite(refused)
            ? refuse('tpm', refused)
            : refuse(
                'tpm',
                refused,
                `the request alone (${weight} tokens) exceeds this process's share of the TPM limit while Redis is unavailable: ${pair.tpmShare} of ${pair.tpmPoints} tokens (1 of ${this.#instances} instances)`,
              )
        }
      }
      if (!pair.rpm && !(pair.tpm && weight > 0)) return ADMITTED
      this.#full(provider, rpmFullMs)
      let given = false
      const giveBack = async (): Promise<void> => {
        if (given) return
        given = true
        // What it took is back: the window has room again.
        this.#full(provider, undefined)
        try {
          if (pair.rpm) {
            await this.#reward(pair.rpm, provider, 1, rpmWindow)
            this.#roomMade(pair, 'rpm')
          }
          if (pair.tpm && weight > 0) {
            await this.#reward(pair.tpm, provider, weight, tpmWindow)
            this.#roomMade(pair, 'tpm')
          }
        } catch {
          // Redis failing: the count stays, an unused share until its window ends.
        }
      }
      return { admitted: true, giveBack }
    } finally {
      // A client without `status` (it is optional: any object with
      // `evalsha`/`eval` fits) that answered is back too: read as `ready`,
      // it stayed degraded for good, "back" never said, once Redis had failed.
      const status = this.#redis?.status
      if (this.#held.length > 0 && (status === undefined || status === 'ready')) {
        this.#sendHeld()
      }
      if (
        this.#degraded &&
        this.#fallbackUses === usesBefore &&
        (status === undefined || status === 'ready')
      ) {
        this.#degraded = false
        infoSafely(this.#logger, 'hourglass limits: Redis is back; limits are shared again')
      }
    }
  }

  /**
   * Gives `points` back to `limiter`'s window of `provider` that counted
   * them (`window`): on Redis the one ending when the count's did, on
   * Redis's clock (`LIMIT_SCRIPT`'s ARGV[5]), in memory — and on the local share Redis
   * falls back to — the one ending when it did (`MemoryLimiter`). A count
   * the local share made goes back to it alone, Redis answering or not: on
   * Redis, whose window never counted it, it lent that window a request
   * (`LIMIT_SCRIPT` checks the window's end only). A count Redis made never goes to
   * the local share, Redis failing on the give-back or not.
   */
  #reward(
    limiter: RateLimiterAbstract,
    provider: string,
    points: number,
    window: CountedWindow | undefined,
  ): Promise<unknown> {
    const end = window === undefined ? {} : { [COUNTED_WINDOW_END]: window.endsAt }
    if (window?.local !== undefined) return window.local.giveBack(provider, points, end)
    const status = this.#redis?.status
    if (window !== undefined && status !== undefined && status !== 'ready') {
      // Redis counted it and is not asked now: held until it is (`#held`).
      if (this.#held.length < MAX_HELD_GIVE_BACKS) {
        this.#held.push({ limiter, provider, points, window })
      }
      return Promise.resolve()
    }
    // On Redis, its window named by when it ends on Redis's clock: named by
    // the PTTL its count saw, a give-back a window late (a request queued
    // for a connection, released unsent) found the next window part spent,
    // its PTTL below that one, and lent it a request.
    this.#redis?.giveBackTo(window?.redisEndMs)
    // `reward` reaches the script synchronously (or the local limiter, which then gives nothing back).
    const givenBack = limiter.reward(
      provider,
      points,
      this.#redis === undefined ? end : { ...end, [COUNTED_ON_REDIS]: true },
    )
    this.#redis?.giveBackTo(undefined)
    return givenBack
  }

  /** Sends the give-backs held while Redis was not asked, but those whose windows have ended. */
  #sendHeld(): void {
    const now = Date.now()
    for (const { limiter, provider, points, window } of this.#held.splice(0)) {
      if (window.endsAt <= now) continue
      const pair = this.#pairs.get(provider)
      void this.#reward(limiter, provider, points, window).then(() => {
        if (pair !== undefined) this.#roomMade(pair, limiter === pair.rpm ? 'rpm' : 'tpm')
      }, noop)
    }
  }

  /** `take`, telling `onTaken` whether `limiter`'s local share made the count (Redis unavailable). */
  #take(
    limiter: RateLimiterAbstract,
    key: string,
    points: number,
    onTaken: (window: CountedWindow, remainingPoints: number) => void,
  ): Promise<number | undefined> {
    const local = this.#locals.get(limiter)
    // The library hands the local limiter this very object when it takes the count over.
    const options = {}
    // Filled by the script's reply before the consume resolves (a count on Redis).
    const end: WindowEnd = {}
    // `consume` reaches the script synchronously, as `reward` does.
    this.#redis?.countInto(end)
    const taken = take(limiter, key, points, options, (window, left) =>
      onTaken(
        local?.countedHere(options) === true
          ? { ...window, local }
          : { ...window, redisEndMs: end.endMs },
        left,
      ),
    )
    this.#redis?.countInto(undefined)
    return taken
  }

  #onFallback(): void {
    this.#fallbackUses++
    if (this.#degraded) return
    this.#degraded = true
    const why = this.#redis?.why()
    warnSafely(
      this.#logger,
      `hourglass limits: Redis unavailable${why === undefined ? '' : ` (${why})`}; limiting on this process alone (limit / instances) until it is back`,
    )
  }
}

function noop(): void {}

/** What one of `instances` processes allows of `limit` while Redis is down: at least 1. */
function share(limit: number, instances: number): number {
  return Math.max(1, Math.floor(limit / instances))
}

/** Give-backs held at most while Redis is not asked (`ProviderLimits.#held`). */
const MAX_HELD_GIVE_BACKS = 1000

/** A give-back of a count Redis made, held while Redis is not asked. */
interface HeldGiveBack {
  limiter: RateLimiterAbstract
  provider: string
  points: number
  window: CountedWindow
}

/** The window a count went to, as a give-back names it. */
interface CountedWindow {
  /** Its ms left when counted (Redis: the PTTL the script saw). */
  ms: number
  /** Counted on Redis: when it ends on Redis's clock (`WindowEnd`), what a give-back names it by. */
  redisEndMs?: number | undefined
  /** Its end, epoch ms on `Date.now`: the clock of the in-memory windows (`MemoryLimiter`). */
  endsAt: number
  /** The local share that counted it, Redis unavailable; none: Redis did (or memory, without Redis). */
  local?: LocalFallbackLimiter | undefined
}

/** Consume `points`; undefined when taken, else ms until reset (a refusal counts nothing: `LIMIT_SCRIPT`, `MemoryLimiter`). */
async function take(
  limiter: RateLimiterAbstract,
  key: string,
  points: number,
  /** The consume's options (`LocalFallbackLimiter.countedHere` knows it by them). */
  options: { [key: string]: unknown },
  /** Told the taken count's window, and the points it has left. */
  onTaken?: (window: CountedWindow, remainingPoints: number) => void,
): Promise<number | undefined> {
  try {
    const taken = await limiter.consume(key, points, options)
    const ms = taken.msBeforeNext
    // Counted in memory (here, or on the local share for a Redis that
    // failed): the end of the window it counted in, as the count read it.
    const counted = options[COUNTED_WINDOW_END]
    const endsAt = typeof counted === 'number' ? counted : Date.now() + ms
    onTaken?.({ ms, endsAt }, taken.remainingPoints)
    return undefined
  } catch (error) {
    const ms = (error as { msBeforeNext?: unknown } | undefined)?.msBeforeNext
    if (typeof ms !== 'number') throw error
    return Math.max(0, ms)
  }
}
