import type { Clock } from '@hourglass/core'

/**
 * The part of BullMQ's Redis client used here: a Lua script, defined and run
 * through the same abstraction BullMQ runs its own scripts with, so it works
 * with every client BullMQ supports (ioredis, node-redis, Bun, Valkey GLIDE).
 */
interface ScriptClient {
  defineCommand(name: string, definition: { numberOfKeys: number; lua: string }): void
  runCommand(name: string, args: unknown[]): Promise<unknown>
}

/** One reading of the Redis server's clock, bracketed by the local clock. */
export interface RedisTimeSample {
  /** Redis server time (`TIME`), in ms. */
  redisMs: number
  /** Local clock when the command was sent, in ms. */
  sentAt: number
  /** Local clock when the reply was read, in ms. */
  receivedAt: number
}

// Why the Redis clock: a job's time runs out in one place, but is checked on
// whichever host takes it, perhaps minutes later. Wall clocks of producer and
// consumer hosts disagree (seconds, when NTP is broken), and a monotonic clock
// means nothing on another host. Every producer and worker of a queue shares
// one clock: the Redis server's. The reading is taken at an unknown instant
// between `sentAt` and `receivedAt`, so each side assumes the instant that
// makes the job's time shorter — a deadline is never extended, and is
// shortened by at most one round trip at each end.
//
// Not `readOnly`: with replicas, a read-only script may be sent to a replica,
// another host with another clock. The key routes it, in a cluster, to the
// node that holds the queue — the same node for producer and worker.
const COMMAND = 'hourglassTime'
const LUA = "return redis.call('TIME')"

const inFlight = new WeakMap<
  object,
  Map<string, { clock: Clock; reading: Promise<RedisTimeSample> }>
>()

/** The script client behind a BullMQ queue's or job's backend (BullMQ's default, Redis-backed one). */
export async function scriptClientOf(backend: unknown): Promise<ScriptClient> {
  const client = await (backend as { client?: Promise<unknown> } | undefined)?.client
  const c = client as Partial<ScriptClient> | undefined
  if (typeof c?.defineCommand !== 'function' || typeof c.runCommand !== 'function') {
    throw new TypeError(
      '@hourglass/bullmq needs a Redis-backed queue (BullMQ’s default backend): the deadline is kept on the Redis server’s clock',
    )
  }
  return c as ScriptClient
}

/** The scripts defined on each client, by command name. */
const defined = new WeakMap<object, Set<string>>()

/**
 * Runs a Lua script through `client`, defined on it under `name` the first
 * time (as BullMQ defines its own): its keys route it, in a cluster, to the
 * node that holds them; `args` follow them (ARGV).
 */
export function runScript(
  client: ScriptClient,
  name: string,
  lua: string,
  keys: readonly string[],
  args: readonly string[] = [],
): Promise<unknown> {
  let names = defined.get(client)
  if (!names) {
    names = new Set()
    defined.set(client, names)
  }
  if (!names.has(name)) {
    client.defineCommand(name, { numberOfKeys: keys.length, lua })
    names.add(name)
  }
  return client.runCommand(name, [...keys, ...args])
}

/**
 * Read the Redis server's clock. Callers that ask while a reading is on its
 * way share it: it was sent before they asked, so it brackets their instant
 * as well as its own, and a burst of jobs costs one round trip, not one each.
 */
export function readRedisTime(
  client: ScriptClient,
  key: string,
  clock: Clock,
): Promise<RedisTimeSample> {
  let byKey = inFlight.get(client)
  if (!byKey) {
    byKey = new Map()
    inFlight.set(client, byKey)
  }
  const pending = byKey.get(key)
  if (pending && pending.clock === clock) return pending.reading
  const reading = send(client, key, clock).finally(() => {
    if (byKey.get(key)?.reading === reading) byKey.delete(key)
  })
  byKey.set(key, { clock, reading })
  return reading
}

async function send(client: ScriptClient, key: string, clock: Clock): Promise<RedisTimeSample> {
  const sentAt = clock.now()
  const reply = await runScript(client, COMMAND, LUA, [key])
  const receivedAt = clock.now()
  const [seconds, micros] = Array.isArray(reply) ? reply : []
  const redisMs = Number(seconds) * 1000 + Number(micros) / 1000
  if (!Number.isFinite(redisMs)) {
    throw new TypeError(`Redis TIME gave an unexpected reply: ${JSON.stringify(reply)}`)
  }
  return { redisMs, sentAt, receivedAt }
}

/**
 * A local deadline's expiry as a time on the Redis clock, rounded down: the
 * reading is assumed taken as late as possible (when the reply arrived), so
 * the stored expiry is early by at most the round trip, never late.
 */
export function toRedisMs(localMs: number, sample: RedisTimeSample): number {
  return Math.floor(localMs + (sample.redisMs - sample.receivedAt))
}

/**
 * A time on the Redis clock as a local clock time: the reading is assumed
 * taken as early as possible (when the command was sent), so the local expiry
 * is early by at most the round trip, never late.
 */
export function toLocalMs(redisMs: number, sample: RedisTimeSample): number {
  return redisMs - (sample.redisMs - sample.sentAt)
}
