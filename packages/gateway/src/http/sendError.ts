import type { Response } from 'express'
import type { GatewayContext } from '../GatewayContext.js'
import { type ErrorReply, errorReply } from './errorReply.js'

/**
 * Answers with an OpenAI-shaped error, unless the response already started
 * (then the caller ends the stream its own way) or the deadline middleware
 * already answered (its writers are no-ops by then). Returns the reply.
 */
export function sendError(ctx: GatewayContext, res: Response, error: unknown): ErrorReply {
  const shaped = ctx.redact(errorReply(error))
  if (!res.headersSent && !res.writableEnded) {
    res.status(shaped.status)
    for (const [name, value] of Object.entries(shaped.headers)) res.setHeader(name, value)
    res.setHeader('cache-control', 'no-store')
    res.json(shaped.body)
  }
  return shaped
}
