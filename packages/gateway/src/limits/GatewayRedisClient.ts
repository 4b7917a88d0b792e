import type { RedisScriptClient } from '../llm.js'

/**
 * What the gateway uses of a Redis client brought by the caller
 * (`createGateway({ redis })`), typed by shape rather than as one ioredis
 * version's class: an app's own ioredis 5 client fits, as 6 does (the
 * gateway's own, made from `config.redis.url`). The limits
 * (`ProviderLimits`) and the shared cooldowns (`RedisCooldownStore`) run
 * their scripts through `evalsha`/`eval`; `/readyz` reads `status` (only
 * `ready` is a connection) and probes with `eval`. Nothing else is touched:
 * no command is defined on it, no listener added, and `close()` leaves it
 * open (it is the caller's).
 */
export interface GatewayRedisClient extends RedisScriptClient {
  /** ioredis's connection state: anything but `ready` counts limits and cooldowns locally. */
  readonly status: string
}

/**
 * Whether `value` has the shape the gateway uses: a `status` string and
 * `eval` / `evalsha` methods (an ioredis Redis or Cluster has them on its
 * prototype). Checked when the gateway is made, so a wrong `redis` option
 * is an option error naming it, not a failure inside llm's cooldown store.
 */
export function isGatewayRedisClient(value: unknown): value is GatewayRedisClient {
  if (typeof value !== 'object' || value === null) return false
  const client = value as Record<string, unknown>
  return (
    typeof client['status'] === 'string' &&
    typeof client['eval'] === 'function' &&
    typeof client['evalsha'] === 'function'
  )
}
