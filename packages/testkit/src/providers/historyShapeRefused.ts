import { anthropicErrors } from './errors/anthropicErrors.js'
import type { ErrorReply, ProviderDialect, ProviderRoute } from './types.js'

/**
 * The 400 each API answers a history it cannot read — no message at all, a
 * role Gemini does not know —; undefined otherwise. The fake answered 200,
 * so a client that sent an empty history (a conversation cleared, or every
 * message filtered out) or OpenAI's `assistant` role to Gemini passed
 * against the fake and failed against the API:
 * - OpenAI chat (the `openai` dialect): `messages: []`, "Invalid 'messages':
 *   empty array. Expected an array with minimum length 1, but got an empty
 *   array instead.", `param: "messages"`, `code: "empty_array"` (the words
 *   of its `tools: []` refusal);
 * - Anthropic (the `anthropic` dialect): "messages: at least one message is
 *   required" (`anthropicErrors.invalidRequest()`'s own default); a message
 *   whose role is `system` (OpenAI's place for instructions, which
 *   Anthropic takes as the top-level `system`): "messages: Unexpected role
 *   \"system\". The Messages API accepts a top-level `system` parameter,
 *   not \"system\" as an input message role." (quoted in
 *   ianarawjo/ChainForge#271); another role than `user` or `assistant`:
 *   "messages.N.role: Input should be 'user' or 'assistant'";
 * - Gemini: a `contents[].role` other than `user` or `model` (left out is
 *   taken), `INVALID_ARGUMENT` "Please use a valid role: user, model."
 *   (quoted in langgenius/dify-official-plugins#566).
 */
export function historyShapeRefused(
  dialect: ProviderDialect,
  route: ProviderRoute,
  body: unknown,
): ErrorReply | undefined {
  const json = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>
  const messages = json['messages']
  if (
    dialect === 'openai' &&
    route === 'openai-chat' &&
    Array.isArray(messages) &&
    messages.length === 0
  ) {
    return {
      kind: 'error',
      status: 400,
      body: {
        error: {
          message:
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
          type: 'invalid_request_error',
          param: 'messages',
          code: 'empty_array',
        },
      },
    }
  }
  if (
    dialect === 'anthropic' &&
    route === 'anthropic-messages' &&
    Array.isArray(messages) &&
    messages.length === 0
  ) {
    return anthropicErrors.invalidRequest('messages: at least one message is required')
  }
  if (dialect === 'anthropic' && route === 'anthropic-messages' && Array.isArray(messages)) {
    for (let i = 0; i < messages.length; i++) {
      const message: unknown = messages[i]
      // A message that is no object is read as no turn, as before (its own words unknown).
      if (typeof message !== 'object' || message === null) continue
      const role = message as { role?: unknown }
      if (role.role === 'user' || role.role === 'assistant') continue
      return anthropicErrors.invalidRequest(
        role.role === 'system'
          ? 'messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.'
          : `messages.${i}.role: Input should be 'user' or 'assistant'`,
      )
    }
  }
  const contents = json['contents']
  if (route === 'gemini' && Array.isArray(contents)) {
    const bad = contents.some((c) => {
      const role = (typeof c === 'object' && c !== null ? c : {}) as { role?: unknown }
      // `function` too: the role older SDKs gave function responses, which v1beta still takes.
      return role.role !== undefined && !['user', 'model', 'function'].includes(role.role as string)
    })
    if (bad) {
      const message = 'Please use a valid role: user, model.'
      return {
        kind: 'error',
        status: 400,
        body: { error: { code: 400, message, status: 'INVALID_ARGUMENT' } },
      }
    }
  }
  return undefined
}
