import { DEADLINE_EXPIRED_HEADER } from '@hourglass/core'
import { callersBudget } from '@hourglass/express'
import type { Response } from 'express'
import type { GatewayContext } from '../GatewayContext.js'
import {
  clientClosedReply,
  type ErrorReply,
  errorReply,
  reportDeadlineReply,
} from './errorReply.js'
import { logIfBug } from './logIfBug.js'
import { scopeOf } from './requestScope.js'
import { sendJson } from './sendJson.js'
import type { CapField } from './untranslatableRefusal.js'

/**
 * Answers with an OpenAI-shaped error, unless the response already started
 * (then the caller ends the stream its own way), the deadline middleware
 * already answered (its writers are no-ops by then), or the client is gone
 * (`client_closed`, 499 in the log: nothing is written to its socket).
 * Returns the reply, notes its code on the request for the metrics, and
 * reports a deadline reply to @hourglass/express (`reportExpired`).
 * `capField`: the output cap field the client sent (`errorReply`).
 */
export function sendError(
  ctx: GatewayContext,
  res: Response,
  error: unknown,
  capField?: CapField,
): ErrorReply {
  // Gone before we could answer, whatever the error says (the deadline may have fired as it left).
  const gone = !res.writableFinished && (res.destroyed || res.socket?.destroyed === true)
  const shaped = gone ? clientClosedReply() : ctx.redact(errorReply(error, ctx.keyWait, capField))
  const scope = scopeOf(res)
  if (scope !== undefined) scope.errorCode ??= shaped.body.error.code
  logIfBug(ctx, shaped.body.error.code, error)
  if (shaped.status !== 499 && !res.headersSent && !res.writableEnded && !res.destroyed) {
    for (const [name, value] of Object.entries(shaped.headers)) res.setHeader(name, value)
    // `x-deadline-expired` says the caller's budget is gone too: not when
    // the budget was the gateway's own cap (`maxMs` below what the caller
    // sent, `defaultMs` when it sent none), deadline()'s rule. Marked, a
    // caller 200 ms into its 5 s took the 504 for its own expiry and gave up.
    // `x-should-retry: false` stays (the SDKs retry with no budget).
    if (callersBudget(res.req) === false) res.removeHeader(DEADLINE_EXPIRED_HEADER)
    res.setHeader('cache-control', 'no-store')
    sendJson(res, shaped.status, shaped.body)
  }
  // Every path that answers with an error comes here (the handler's catch,
  // the router's error handler: a body that did not arrive in time): a
  // deadline reply is the request's expiry, whoever wrote it.
  reportDeadlineReply(res.req, shaped)
  return shaped
}
