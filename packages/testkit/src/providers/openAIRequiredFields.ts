import type { ErrorReply, ProviderDialect, ProviderRoute } from './types.js'

/**
 * OpenAI's 400 for a chat completion request that names no `model` or has
 * no `messages`, before anything is generated; undefined otherwise.
 * - no model (left out, `null`, or no JSON object at all — an empty body):
 *   `{"error":{"message":"you must provide a model parameter","type":
 *   "invalid_request_error","param":null,"code":null}}` (quoted from the
 *   API in danielmiessler/Fabric#239 and lss233/kirara-ai#800);
 * - no messages: "Missing required parameter: 'messages'.", `param:
 *   "messages"`, `code: "missing_required_parameter"` (the API's words for
 *   every missing parameter, as openai/codex#6934 quotes one).
 * The fake answered both with its scripted text, naming its default model:
 * a client whose model setting was unset (`model: undefined`, which
 * `JSON.stringify` leaves out) or that lost its messages passed against the
 * fake and got a 400 from OpenAI. The `openai` dialect only, as the other
 * OpenAI-only refusals: what the compatible providers answer is theirs.
 */
export function openAIRequiredFieldMissing(
  dialect: ProviderDialect,
  route: ProviderRoute,
  body: unknown,
): ErrorReply | undefined {
  if (dialect !== 'openai' || route !== 'openai-chat') return undefined
  const json = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>
  if (json['model'] === undefined || json['model'] === null) {
    return refusal('you must provide a model parameter', null, null)
  }
  if (json['messages'] === undefined || json['messages'] === null) {
    return refusal(
      "Missing required parameter: 'messages'.",
      'messages',
      'missing_required_parameter',
    )
  }
  return undefined
}

function refusal(message: string, param: string | null, code: string | null): ErrorReply {
  return {
    kind: 'error',
    status: 400,
    body: { error: { message, type: 'invalid_request_error', param, code } },
  }
}
