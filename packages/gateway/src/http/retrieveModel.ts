import type { Request, Response } from 'express'
import type { GatewayConfig } from '../config/gatewayConfigSchema.js'
import type { GatewayContext } from '../GatewayContext.js'
import { modelNotFound } from './modelNotFound.js'
import { sendError } from './sendError.js'
import { sendJson } from './sendJson.js'

/**
 * One model as OpenAI's `GET /v1/models` and `GET /v1/models/{id}` describe
 * it. `created` is 0: a config entry has no creation date, and a made-up one
 * (the gateway's start) would change on every restart.
 */
export function modelObject(id: string): Record<string, unknown> {
  return { id, object: 'model', created: 0, owned_by: 'hourglass' }
}

/** A name a client may send as `model`: an entry or an alias (own keys only: not `constructor`). */
function isModelName(config: GatewayConfig, id: string): boolean {
  return Object.hasOwn(config.models, id) || Object.hasOwn(config.aliases, id)
}

/**
 * `GET /v1/models/{id}` (the official clients' `models.retrieve`): the model
 * as the list has it, for an entry or an alias; an unknown one is a 404
 * `model_not_found` in OpenAI's error shape, as OpenAI answers it. The id is
 * one path segment: the official clients send a `/` in it as `%2F`, which
 * the router decodes. `answered` writes the request's log line.
 */
export function retrieveModel(
  ctx: GatewayContext,
  answered: (req: Request, status: number, error: string | undefined) => void,
) {
  return (req: Request, res: Response): void => {
    const id = String(req.params['id'] ?? '')
    if (isModelName(ctx.config, id)) {
      sendJson(res, 200, modelObject(id))
      answered(req, 200, undefined)
      return
    }
    const shaped = sendError(ctx, res, modelNotFound(id))
    // The request's one log line, as every API answer has.
    answered(req, shaped.status, shaped.body.error.code)
  }
}
