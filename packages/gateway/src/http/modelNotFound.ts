import { quoted } from '../llm.js'
import { GatewayRequestError } from './GatewayRequestError.js'

/** How much of an unknown model's name the 404 echoes (escapes count). */
const MAX_MODEL_CHARS = 100

/**
 * The 404 `model_not_found` for a model name no entry or alias has, as
 * OpenAI answers it (`param: 'model'`), from `POST /v1/chat/completions`
 * and `GET /v1/models/{id}` alike. The name is the client's: echoed escaped
 * and bounded (`quoted`), so a `\n` or a NUL in it shows instead of
 * breaking the message.
 */
export function modelNotFound(requested: string): GatewayRequestError {
  return new GatewayRequestError({
    status: 404,
    errorCode: 'model_not_found',
    param: 'model',
    message: `the model ${quoted(requested, MAX_MODEL_CHARS)} does not exist on this gateway (GET /v1/models lists them)`,
  })
}
