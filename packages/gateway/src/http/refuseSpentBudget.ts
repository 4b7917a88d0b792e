import {
  adaptiveReserveMs,
  DEADLINE_SOURCES,
  DeadlineExceededError,
  readDeadline,
} from '@hourglass/core'
import type { RequestHandler } from 'express'

/**
 * Ahead of the ingress `deadline()`: a request whose budget is no more than
 * that middleware's reserve would be answered by it on arrival with its
 * plain 504 (`{"error":"deadline_exceeded",…}`) — not OpenAI's error shape,
 * no `x-should-retry: false` (so the official SDKs retry it, twice by
 * default), and no `request` log line. Refused here instead, through the
 * router's error handler: the gateway's own 504, logged and counted like
 * any other. The same headers and clamp as the `deadline()` it precedes.
 *
 * It runs before that middleware reads the headers, so it has no reading
 * to reuse. Most requests carry none of them (the official SDKs send none),
 * and for those it only looks their names up: Node's header names are
 * lower case, so a lookup is the whole test — where `readDeadline`, which
 * takes any container and any letter case, walks every header for each name
 * it misses (about 1 µs a request, for a reading `deadline()` makes again
 * right after).
 */
export function refuseSpentBudget(config: {
  maxMs: number
  reserveMs?: number | undefined
}): RequestHandler {
  const options = { maxMs: config.maxMs }
  return (req, _res, next) => {
    if (!hasDeadlineHeader(req.headers)) {
      next()
      return
    }
    const { ms } = readDeadline(req.headers, options)
    // deadline() gives the handler `ms - reserve`: nothing left means it answers at once.
    if (ms === undefined || ms > (config.reserveMs ?? adaptiveReserveMs())) {
      next()
      return
    }
    next(new DeadlineExceededError({ budgetMs: ms, elapsedMs: 0 }))
  }
}

/** One of the deadline headers `deadline()` trusts (its default sources) is there. */
function hasDeadlineHeader(headers: Readonly<Record<string, unknown>>): boolean {
  for (const name of DEADLINE_SOURCES) if (headers[name] !== undefined) return true
  return false
}
