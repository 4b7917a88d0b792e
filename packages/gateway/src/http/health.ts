import type { RequestHandler } from 'express'
import { sendJson } from './sendJson.js'

/**
 * Where limits and cooldowns are counted right now:
 * - `none`: no Redis configured (this instance alone, by design);
 * - `shared`: in Redis, with every instance on it;
 * - `local-fallback`: Redis is connected but the last limit or cooldown
 *   command failed or timed out (and, on `/readyz`, the write probe too), so this
 *   instance decides alone (`limit / instances`) until one succeeds again;
 * - `unreachable`: no connection to Redis (never made, or lost); limits and
 *   cooldowns are local meanwhile.
 */
export type RedisState = 'none' | 'shared' | 'local-fallback' | 'unreachable'

/** `GET /healthz`, liveness: 200 while the process serves HTTP, whatever Redis does. */
export function healthz(): RequestHandler {
  return (_req, res) => {
    res.setHeader('cache-control', 'no-store')
    sendJson(res, 200, { status: 'ok' })
  }
}

/**
 * `GET /readyz`, readiness: 503 only while shutting down (a drain: route no
 * new traffic here). Redis being away does not make an instance unready —
 * every instance of a fleet sees the same Redis, so a 503 would take the
 * whole fleet out of rotation while each one can still serve safely on its
 * local share (`limit / instances`); the state is in the body (and the log)
 * for alerts instead. `redis()` may take a bounded round trip; it never rejects.
 */
export function readyz(state: {
  draining(): boolean
  redis(): RedisState | Promise<RedisState>
}): RequestHandler {
  return (_req, res) => {
    void Promise.resolve(state.redis()).then((redis) => {
      // Read after the round trip: a drain that began meanwhile is what the prober must see.
      const draining = state.draining()
      res.setHeader('cache-control', 'no-store')
      sendJson(res, draining ? 503 : 200, { status: draining ? 'draining' : 'ready', redis })
    })
  }
}
