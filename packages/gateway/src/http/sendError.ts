import type { Response } from 'express'
import type { GatewayContext } from '../GatewayContext.js'
import {
  clientClosedReply,
  type ErrorReply,
  errorReply,
  reportDeadlineReply,
} from './errorReply.js'
import { scopeOf } from './requestScope.js'
import { sendJson } from './sendJson.js'

/**
 * Answers with an OpenAI-shaped error, unless the response already started
 * (then the caller ends the stream its own way), the deadline middleware
 * already answered (its writers are no-ops by then), or the client is gone
 * (`client_closed`, 499 in the log: nothing is written to its socket).
 * Returns the reply, notes its code on the request for the metrics, and
 * reports a deadline reply to @hourglass/express (`reportExpired`).
 */
export function sendError(ctx: GatewayContext, res: Response, error: unknown): ErrorReply {
  // Gone before we could answer, whatever the error says (the deadline may have fired as it left).
  const gone = !res.writableFinished && (res.destroyed || res.socket?.destroyed === true)
  const shaped = gone ? clientClosedReply() : ctx.redact(errorReply(error, ctx.keyWait))
  const scope = scopeOf(res)
  if (scope !== undefined) scope.errorCode ??= shaped.body.error.code
  // A bug's 500 says nothing to the client, and its request line only
  // `internal_error`: the error itself goes to the log, or nobody can find it.
  if (shaped.body.error.code === 'internal_error') ctx.log('error', 'internal-error', bugOf(error))
  if (shaped.status !== 499 && !res.headersSent && !res.writableEnded && !res.destroyed) {
    for (const [name, value] of Object.entries(shaped.headers)) res.setHeader(name, value)
    res.setHeader('cache-control', 'no-store')
    sendJson(res, shaped.status, shaped.body)
  }
  // Every path that answers with an error comes here (the handler's catch,
  // the router's error handler: a body that did not arrive in time): a
  // deadline reply is the request's expiry, whoever wrote it.
  reportDeadlineReply(res.req, shaped)
  return shaped
}

/** What a log line says of an error nobody classified: its class, message and stack (the log scrubs secrets from each). */
function bugOf(error: unknown): Record<string, unknown> {
  try {
    if (error instanceof Error) {
      return { errorClass: error.name, reason: error.message, stack: error.stack }
    }
    return { errorClass: typeof error, reason: String(error) }
  } catch {
    // A hostile getter or toString: the line says so much.
    return { errorClass: typeof error }
  }
}
