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
 * - `unreachable`: no connection to Redis (never made, or lost, or closed: a
 *   database the server does not have, see redisClient); limits and
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
    // Draining already: the answer is 503 whatever Redis says, so it is given
    // now, with what the last check established. Asked first, a frozen Redis
    // held the prober's 503 for the probe's whole bound (up to 500 ms), while
    // the instance it should take out of rotation was still sent traffic.
    if (state.draining()) {
      answerReadiness(res, true, state.known(), state.keysRetired)
      return
    }
    const checked = state.redis()
    const deadline = (req as { deadline?: Deadline }).deadline
    // Read after the round trip: a drain that began meanwhile is what the prober must see.
    const answer = (redis: RedisState) =>
      answerReadiness(res, state.draining(), redis, state.keysRetired)
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

/** `/readyz`'s answer: 503 `draining` during a shutdown, else 200 `ready`; the Redis state and retired keys in the body. */
function answerReadiness(
  res: Parameters<RequestHandler>[1],
  draining: boolean,
  redis: RedisState,
  keysRetired: (() => readonly KeysRetired[]) | undefined,
): void {
  res.setHeader('cache-control', 'no-store')
  const retired = keysRetired?.() ?? []
  sendJson(res, draining ? 503 : 200, {
    status: draining ? 'draining' : 'ready',
    redis,
    ...(retired.length === 0 ? {} : { keysRetired: retired }),
  })
}
