import { Redis } from 'ioredis'
import type { GatewayConfig } from './config/gatewayConfigSchema.js'
import type { GatewayContext } from './GatewayContext.js'

/**
 * The Redis client the gateway makes from `config.redis`. Limits and
 * cooldowns must answer now or fall back to local state: no queueing while
 * disconnected, no resending after a reconnect (a resent INCR would count a
 * request twice), and a hung Redis is cut off after `commandTimeoutMs`.
 */
export function createRedisClient(
  config: NonNullable<GatewayConfig['redis']>,
  log: GatewayContext['log'],
): Redis {
  const client = new Redis(config.url, {
    lazyConnect: false,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    commandTimeout: config.commandTimeoutMs,
  })
  watchStart(client, config.url, log)
  return client
}

/**
 * Say once, at start, that Redis cannot be reached (limits would otherwise
 * be local without a word), and once when it first connects after that.
 * Later outages are reported by the limits and admission themselves. Only
 * host and port are named: the URL may carry a password.
 */
function watchStart(client: Redis, url: string, log: GatewayContext['log']): void {
  let connected = false
  let warned = false
  const where = hostOf(url)
  // ioredis reports connection errors as events; without a listener they would crash the process.
  client.on('error', (error: NodeJS.ErrnoException) => {
    if (connected || warned) return
    warned = true
    log('warn', 'redis', {
      message: `Redis at ${where} is unreachable (${error.code ?? 'error'}): limits and cooldowns are counted on this instance alone (limit / instances) until it connects`,
      redis: 'unreachable',
    })
  })
  client.on('ready', () => {
    if (warned && !connected) {
      log('info', 'redis', {
        message: `Redis at ${where} connected: limits are shared`,
        redis: 'shared',
      })
    }
    connected = true
  })
}

function hostOf(url: string): string {
  try {
    const parsed = new URL(url)
    return parsed.host || 'localhost'
  } catch {
    return '(redis)'
  }
}

/** A password in the Redis URL is a secret like the keys: scrubbed wherever it could appear. */
export function redisPassword(url: string | undefined): string[] {
  if (url === undefined) return []
  try {
    const { password } = new URL(url)
    return password === '' ? [] : [decodeURIComponent(password), password]
  } catch {
    return []
  }
}
