import { createRequire } from 'node:module'
import { type Clock, systemClock } from '@hourglass/core'
import type { Redis } from 'ioredis'
import type { GatewayConfig } from './config/gatewayConfigSchema.js'
import type { GatewayContext } from './GatewayContext.js'
import { describeRedisTarget } from './redisTarget.js'

/**
 * The Redis client the gateway makes from `config.redis`. Limits and
 * cooldowns must answer now or fall back to local state: no queueing while
 * disconnected, no resending after a reconnect (a resent INCR would count a
 * request twice), and a hung Redis is cut off after `commandTimeoutMs`.
 */
export function createRedisClient(
  config: NonNullable<GatewayConfig['redis']>,
  log: GatewayContext['log'],
  clock: Clock = systemClock,
): Redis {
  const client = new (loadRedis())(config.url, {
    lazyConnect: false,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    commandTimeout: queueTimeoutMs(config.commandTimeoutMs),
    disconnectTimeout: DISCONNECT_TIMEOUT_MS,
  })
  watchStart(client, config.url, log, clock, startAnswerMs(config.commandTimeoutMs))
  return client
}

/**
 * How long ioredis's `disconnect()` (the gateway's `close()`) waits for
 * Redis to close the socket before destroying it: not at all. The gateway
 * has drained by then and awaits no reply. ioredis's default, 2 s, is a
 * timer it clears only when the socket closes — and a socket that had
 * already closed (Redis gone, the client between reconnects) never closes
 * again: the timer kept a process whose gateway was closed alive 2 s more,
 * as did a frozen Redis that never answers the close.
 */
const DISCONNECT_TIMEOUT_MS = 0

/**
 * ioredis's own bound on a command: only what drops it from the client's
 * queue. Every command the gateway sends is cut off at `commandTimeoutMs`
 * by its own bound (llm's store bounds, the readiness probe: core's
 * `outcomeWithin`), which reads an answer already in the socket before it
 * calls it silence. ioredis's fires in the same timers phase, before the
 * socket is read: at the same value, a loop blocked past it (a CPU-bound
 * request, a loaded machine) failed commands Redis had answered in a
 * millisecond, and the limits fell back to each instance's share — 21
 * requests went out under a fleet limit of 12.
 */
function queueTimeoutMs(commandTimeoutMs: number): number {
  return Math.max(4 * commandTimeoutMs, 2000)
}

/**
 * ioredis, loaded the first time a gateway is given a `redis.url`: about a
 * tenth of a second of a process's start (`import('ioredis')` alone: 130
 * ms), which a gateway on local limits — every `hourglass gateway` started
 * without Redis — paid for nothing. ioredis is CommonJS: `require` loads it
 * synchronously, as `createGateway` is.
 */
function loadRedis(): typeof Redis {
  return (createRequire(import.meta.url)('ioredis') as typeof import('ioredis')).Redis
}

/**
 * How long a Redis that has not connected may stay silent at start before
 * the warning: twice `commandTimeoutMs`, at most 2 s. ioredis gives up on
 * its own only after two unanswered rounds (the client-info commands, then
 * the INFO of its ready check), each bounded by its own command timeout
 * (`queueTimeoutMs`) — minutes with the largest — and a socket that connects but never answers raises no
 * other error. 2 s is as long as `startGateway` waits for Redis before it
 * serves, so the warning comes no later than the first request counted
 * locally; small timeouts keep the warning as early as ioredis's own error.
 */
function startAnswerMs(commandTimeoutMs: number): number {
  return Math.min(2 * commandTimeoutMs, 2000)
}

/**
 * Say once, at start, that Redis cannot be reached (limits would otherwise
 * be local without a word), and once when it first connects after that.
 * Later outages are reported by the limits and admission themselves. Only
 * host and port are named: the URL may carry a password.
 */
function watchStart(
  client: Redis,
  url: string,
  log: GatewayContext['log'],
  clock: Clock,
  answerMs: number,
): void {
  let connected = false
  let warned = false
  const where = describeRedisTarget(url)
  const warn = (why: string) => {
    if (connected || warned) return
    warned = true
    clock.clearTimeout(silence)
    log('warn', 'redis', {
      message: `Redis at ${where} is unreachable (${why}): limits and cooldowns are counted on this instance alone (limit / instances) until it connects`,
      redis: 'unreachable',
    })
  }
  // A Redis that accepts the connection and never answers raises no error
  // for two of ioredis's command timeouts (see startAnswerMs): the silence is the news.
  const silence = clock.setTimeout(
    () =>
      warn(
        client.status === 'connect'
          ? `connected, no answer within ${answerMs} ms`
          : `no connection within ${answerMs} ms`,
      ),
    answerMs,
  )
  // ioredis reports connection errors as events; without a listener they would crash the process.
  client.on('error', (error: NodeJS.ErrnoException) => {
    if (refusedSelect(error)) {
      // ioredis says a refused SELECT (`/99` on a server of 16 databases) as
      // an event and goes on to 'ready' on database 0: the limits read
      // `shared` while every count went where the operator never pointed
      // them — the database of another deployment, with the same prefix.
      // Closed instead: counted on this instance alone, `/readyz` says
      // `unreachable`, and one line names the fix (nothing more is said: no
      // start warning, no 'connected').
      connected = true
      clock.clearTimeout(silence)
      client.disconnect()
      log('error', 'redis', {
        message: `Redis at ${where} refused the database redis.url selects (${firstLine(error.message)}): limits and cooldowns are counted on this instance alone (limit / instances); name a database the server has (its "databases" setting, 16 by default: 0–15) and restart the gateway`,
        redis: 'unreachable',
      })
      return
    }
    warn(error.code ?? firstLine(error.message))
  })
  client.on('ready', () => {
    clock.clearTimeout(silence)
    if (warned && !connected) {
      log('info', 'redis', {
        message: `Redis at ${where} connected: limits are shared`,
        redis: 'shared',
      })
    }
    connected = true
  })
  // disconnect() (the gateway closing) before either: nothing more to say.
  client.once('end', () => clock.clearTimeout(silence))
}

/**
 * ioredis's error for the `SELECT` it sends on each connection, refused by
 * Redis for a database it does not have ("ERR DB index is out of range",
 * older servers "ERR invalid DB index"). Not any refusal of it: a Redis busy
 * with a long script answers SELECT `BUSY` (HELLO and AUTH pass), and
 * ioredis recovers from that on its own once the script ends — closing for
 * good there shut a valid database's shared limits off until a restart.
 */
function refusedSelect(error: unknown): boolean {
  const e = error as { command?: { name?: unknown }; message?: unknown } | null
  return (
    e?.command?.name === 'select' &&
    typeof e.message === 'string' &&
    /\bDB index\b/i.test(e.message)
  )
}

/** An error without a code is said by its message ("Command timed out", "NOAUTH …"): one short line. */
function firstLine(message: string | undefined): string {
  const line = (message ?? '').split('\n')[0]?.trim() ?? ''
  if (line === '') return 'error'
  return line.length > 200 ? `${line.slice(0, 200)}…` : line
}

/**
 * A password in the Redis URL is a secret like the keys: scrubbed wherever it
 * could appear. ioredis takes its options from the URL's query too, so a
 * `?password=` (or `?sentinelPassword=`) is sent as the password, as the one
 * before the host is: both are searched for.
 */
export function redisPassword(url: string | undefined): string[] {
  if (url === undefined) return []
  try {
    const parsed = new URL(url)
    const out = parsed.password === '' ? [] : [decodeURIComponent(parsed.password), parsed.password]
    for (const name of ['password', 'sentinelPassword']) {
      for (const value of parsed.searchParams.getAll(name)) if (value !== '') out.push(value)
    }
    return out
  } catch {
    return []
  }
}
