import { adaptiveReserveMs, DeadlineExceededError, readDeadline } from '@hourglass/core'
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
 * to reuse. Node's header names are lower case, so each is looked up
 * (`lowerCaseNames`), not matched across every header in any letter case:
 * a request with none of them (what the official SDKs send) costs three
 * lookups.
 */
export function refuseSpentBudget(config: {
  maxMs: number
  reserveMs?: number | undefined
}): RequestHandler {
  const options = { maxMs: config.maxMs, lowerCaseNames: true }
  return (req, _res, next) => {
    const { ms } = readDeadline(req.headers, options)
    // deadline() gives the handler `ms - reserve`: nothing left means it answers at once.
    if (ms === undefined || ms > (config.reserveMs ?? adaptiveReserveMs())) {
      next()
      return
    }
    next(new DeadlineExceededError({ budgetMs: ms, elapsedMs: 0 }))
  }
}
