import type { Clock, Deadline } from '@hourglass/core'
import type { RequestHandler } from 'express'
import type { KeysRetired } from '../limits/RetiredKeys.js'
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
 * for alerts instead. `redis()` may take a bounded round trip; it never
 * rejects. It is waited for within the request's deadline, less
 * `reserveMs` to write the answer: a prober with a short budget (a mesh's
 * health check, `x-deadline-remaining-ms: 50`) facing a Redis that does not
 * answer got the ingress backstop's 504 — unready, every instance at once —
 * so past that it is answered with `known()`, what the last check
 * established; the probe goes on, and its verdict counts when it comes.
 * A provider whose every key is retired is the same: said in the body
 * (`keysRetired`), not by a 503 — its keys are usually the fleet's.
 */
export function readyz(state: {
  draining(): boolean
  redis(): RedisState | Promise<RedisState>
  /** What the last check established, without a round trip. */
  known(): RedisState
  /** The providers (or models) with every key retired: in the body, never in the status. */
  keysRetired?: (() => readonly KeysRetired[]) | undefined
  clock: Clock
  reserveMs: number
}): RequestHandler {
  return (req, res) => {
    const checked = state.redis()
    const deadline = (req as { deadline?: Deadline }).deadline
    const answer = (redis: RedisState) => {
      // Read after the round trip: a drain that began meanwhile is what the prober must see.
      const draining = state.draining()
      res.setHeader('cache-control', 'no-store')
      const retired = state.keysRetired?.() ?? []
      sendJson(res, draining ? 503 : 200, {
        status: draining ? 'draining' : 'ready',
        redis,
        ...(retired.length === 0 ? {} : { keysRetired: retired }),
      })
    }
    const patienceMs = deadline === undefined ? Infinity : deadline.remaining() - state.reserveMs
    if (typeof checked === 'string' || !Number.isFinite(patienceMs)) {
      void Promise.resolve(checked).then(answer)
      return
    }
    // A timer of our own, not core's `outcomeWithin`: that one gives a late
    // outcome a turn of the loop after its timer, where the backstop's timer,
    // due `reserveMs` later, can already have answered 504.
    let answered = false
    const timer = state.clock.setTimeout(
      () => {
        if (answered) return
        answered = true
        answer(state.known())
      },
      Math.max(0, patienceMs),
    )
    void checked.then((redis) => {
      if (answered) return
      answered = true
      state.clock.clearTimeout(timer)
      answer(redis)
    })
  }
}
