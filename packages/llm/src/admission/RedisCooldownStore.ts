import { createHash } from 'node:crypto'
import { type Clock, optionError, refuseUnknownOptions } from '@hourglass/core'
import { clockOption } from '../clockOption.js'
import { answeredWithin } from './answeredWithin.js'
import type { CooldownExtension, CooldownStore } from './CooldownStore.js'
import { canRunScripts, evalScript } from './evalScript.js'
import { firstConnection, sentOnceConnected, stillFirstConnecting } from './firstConnection.js'

/**
 * The part of a Redis client this store uses, typed structurally so
 * @hourglass/llm needs no Redis dependency: an `ioredis` client fits as is.
 */
export interface RedisScriptClient {
  /** ioredis's connection state, when the client has one: admission reads it after a failure. */
  readonly status?: string | undefined
  /**
   * ioredis's: a client made with `lazyConnect: true` (status `wait`) is
   * connected by the store's first command, once per client.
   */
  connect?(): Promise<unknown>
  /** ioredis's events: a client whose first connection is coming up is waited for until `ready`. */
  once?(event: 'ready' | 'close', listener: () => void): unknown
  removeListener?(event: 'ready' | 'close', listener: () => void): unknown
  evalsha(sha1: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>
}

export interface RedisCooldownStoreOptions {
  /** Prefix of every Redis key. Default `hourglass:cooldown:`. */
  keyPrefix?: string | undefined
  /**
   * How long a command may go unanswered before it counts as Redis being
   * down, in ms: the promise rejects (admission then decides on what its
   * process knows, and backs off) while the client's command goes on. Bounds
   * a frozen Redis (connected, `ready`, answering nothing) and a client
   * queueing commands offline, whatever the client's own settings, and
   * whether or not the call has a deadline. Default 1000; `Infinity` = wait
   * for the client.
   */
  commandTimeoutMs?: number | undefined
  /** What `commandTimeoutMs` is measured on. Default the system's; a `ManualClock` in tests. */
  clock?: Clock | undefined
}

/** `commandTimeoutMs`'s default: well above a healthy round trip, well below a call's deadline. */
const DEFAULT_STORE_COMMAND_TIMEOUT_MS = 1000

/**
 * One script, two operations, both atomic on the server. `extend` never
 * shortens a cooldown (two processes learning the same limit at once keep the
 * longer wait); `read` returns every key's PTTL in one round trip. Expiry is
 * Redis's own (`PX`): the server's clock is the only one that counts, and a
 * finished cooldown leaves nothing behind.
 */
export const COOLDOWN_SCRIPT = `
if ARGV[1] == 'extend' then
  local want = tonumber(ARGV[2])
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < want then
    redis.call('SET', KEYS[1], ARGV[3], 'PX', want)
    return {want, 1}
  end
  return {ttl, 0}
end
local out = {}
for i = 1, #KEYS do
  local ttl = redis.call('PTTL', KEYS[i])
  if ttl < 0 then ttl = 0 end
  out[i] = ttl
end
return out
`

/** The longest cooldown written, in ms (~31,700 years): a whole number Redis takes as `PX`. */
const MAX_PX_MS = 1e15

const SCRIPT_SHA1 = createHash('sha1').update(COOLDOWN_SCRIPT).digest('hex')

/** Every option the constructor reads (the type checker keeps the list whole). */
const OPTION_NAMES = Object.keys({
  keyPrefix: true,
  commandTimeoutMs: true,
  clock: true,
} satisfies Record<keyof RedisCooldownStoreOptions, true>)

/**
 * Cooldowns shared by every process that points at the same Redis: a fleet
 * learns a provider's limit once. Keys are `<prefix>{<provider>}:<keyId>`;
 * the hash tag keeps one provider's keys in one Redis Cluster slot, so a read
 * of all of them is one script call. Errors (Redis down) reject: `Admission`
 * then falls back to what its own process knows.
 *
 * It fails fast with any client, a default `new Redis(url)` included: a
 * client that is not `ready` (reconnecting, closed) is not sent the command
 * — ioredis would queue it until Redis came back, and every call waited out
 * its deadline (one with none, for good) — and a command unanswered after
 * `commandTimeoutMs` rejects. As rate-limiter-flexible's
 * `rejectIfRedisNotReady`, which `ProviderLimits` uses on the same client.
 * Before its first `ready` a client is not down but coming up: one made
 * with `lazyConnect: true` is connected by the first command, and the
 * commands wait for that connection (within `commandTimeoutMs`), so
 * `enableOfflineQueue: false` needs no `await client.connect()` first.
 */
export class RedisCooldownStore implements CooldownStore {
  readonly #client: RedisScriptClient
  readonly #prefix: string
  readonly #timeoutMs: number
  readonly #clock: Clock
  /** The client was seen `ready`: a state other than that is a lost connection, not the first one coming up. */
  #wasReady = false

  constructor(client: RedisScriptClient, options: RedisCooldownStoreOptions = {}) {
    // Used only once a cooldown is read or written: a client that is none
    // (null, a URL string) was accepted, and every call then warned
    // "cooldown store unavailable", each process deciding alone for good.
    if (!canRunScripts(client)) {
      throw optionError(
        'RedisCooldownStore: client',
        'a Redis client with evalsha and eval (an ioredis Redis or Cluster)',
        client,
      )
    }
    // Ignored, `commandTimeoutMS: 50` left every command on the default timeout.
    refuseUnknownOptions(options, OPTION_NAMES, 'new RedisCooldownStore()')
    const timeoutMs = options.commandTimeoutMs ?? DEFAULT_STORE_COMMAND_TIMEOUT_MS
    if (typeof timeoutMs !== 'number' || !(timeoutMs > 0)) {
      throw optionError(
        'RedisCooldownStore: commandTimeoutMs',
        'a number of ms above 0 (Infinity = none)',
        timeoutMs,
      )
    }
    const clock = clockOption('RedisCooldownStore', options.clock)
    this.#client = client
    this.#prefix = options.keyPrefix ?? 'hourglass:cooldown:'
    this.#timeoutMs = timeoutMs
    this.#clock = clock
  }

  /** The client's connection state (`ready`, `reconnecting`…), undefined when it has none. */
  get status(): string | undefined {
    return this.#client.status
  }

  async remaining(provider: string, keyIds: readonly string[]): Promise<number[]> {
    if (keyIds.length === 0) return []
    const keys = keyIds.map((id) => this.#key(provider, id))
    const reply = await this.#run(keys, ['read'])
    if (!Array.isArray(reply)) throw new TypeError('unexpected reply from the cooldown script')
    return keyIds.map((_, i) => Math.max(0, Number(reply[i] ?? 0)))
  }

  async extend(
    provider: string,
    keyId: string,
    waitMs: number,
    reason: string,
  ): Promise<CooldownExtension> {
    // PX needs a whole, positive number of ms that Redis can add to its
    // clock: 1e20 (a `retireMs` meaning "for good, fleet-wide") went out as
    // "1e+20", refused by Redis — the fleet never heard, and the refusal
    // read as the store being down.
    const wantMs = Math.min(Math.max(1, Math.ceil(waitMs)), MAX_PX_MS)
    const reply = await this.#run([this.#key(provider, keyId)], ['extend', wantMs, reason])
    if (!Array.isArray(reply)) throw new TypeError('unexpected reply from the cooldown script')
    return { remainingMs: Number(reply[0]), extended: Number(reply[1]) === 1 }
  }

  #key(provider: string, keyId: string): string {
    return `${this.#prefix}{${provider}}:${keyId}`
  }

  /**
   * One script call, refused at once while the client's connection is lost
   * and bounded by `commandTimeoutMs`: admission learns the store is down
   * (and backs off) instead of waiting on a command Redis may never answer.
   */
  #run(keys: string[], args: Array<string | number>): Promise<unknown> {
    const status = this.#client.status
    let connected: Promise<void> | undefined
    if (status === 'ready') this.#wasReady = true
    else if (status !== undefined) {
      if (!stillFirstConnecting(status, this.#wasReady)) {
        return Promise.reject(
          new Error(`the Redis client is not ready (status: ${status}); not sent`),
        )
      }
      // Connected (lazyConnect) or waited for: sent now, a client without
      // an offline queue refused it, and this process's first cooldown was
      // never shared.
      connected = firstConnection(this.#client)
    }
    const bound = (command: Promise<unknown>) =>
      answeredWithin(
        command,
        this.#timeoutMs,
        'Redis',
        'RedisCooldownStore commandTimeoutMs',
        this.#clock,
      )
    return evalScript(
      this.#client,
      SCRIPT_SHA1,
      COOLDOWN_SCRIPT,
      keys.length,
      [...keys, ...args],
      (send) => sentOnceConnected(connected, send, bound),
      bound,
    )
  }
}
