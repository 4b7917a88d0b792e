import type { ErrorReply, ProviderDialect, ProviderRoute } from './types.js'

/**
 * The model names whose thinking mode is on unless the request turns it
 * off (`thinking: {type: "disabled"}`): deepseek-reasoner (V3.x), and the
 * V4 names — "Thinking mode is enabled by default"
 * (api-docs.deepseek.com/guides/thinking_mode), `deepseek-v4-pro`,
 * `deepseek-v4-flash` and their successor `deepseek-flash` (the pricing
 * page). `deepseek-chat` was the non-thinking name, and a name the fake
 * does not know is left alone: it thinks only when asked to.
 */
const THINKS_BY_DEFAULT = /^deepseek-(reasoner|v4-|flash)/

/** The V4 generation, which words the refusal differently from deepseek-reasoner. */
const V4 = /^deepseek-(v4-|flash)/

/**
 * DeepSeek's 400 for a thinking-mode request whose history leaves out the
 * thinking of a tool loop; undefined for any other request. Between two
 * user messages in which the model called tools, the assistant messages'
 * `reasoning_content` must be passed back in every later request
 * (api-docs.deepseek.com/guides/thinking_mode#tool-calls): every assistant
 * message of such a user turn — the answer after the tool results too —
 * must carry it. The API checks that the
 * field is a string, not that it says anything (its own tool calls come
 * with `""` at times; clients fix the 400 by sending `""`,
 * continuedev/continue#11290). Turns without tool calls need nothing (the
 * guide: sent back, it is ignored).
 *
 * The fake answered 200, so a client that dropped the field (most
 * OpenAI-compatible clients do, rebuilding history) passed its tests and
 * failed every tool loop's second request against DeepSeek. Its words, as
 * the API sends them:
 * - deepseek-reasoner: "Missing `reasoning_content` field in the assistant
 *   message at message index N. For more information, please refer to
 *   https://api-docs.deepseek.com/guides/thinking_mode#tool-calls" (N the
 *   0-based index in `messages`, as quoted in continuedev/continue#10193,
 *   langgenius/dify-official-plugins#2306);
 * - deepseek-v4-* and deepseek-flash: "The `reasoning_content` in the
 *   thinking mode must be passed back to the API." (Gitlawb/openclaude#876,
 *   router-for-me/CLIProxyAPI#2999, ad-naan/Adnify#193 on the V4.1 flash).
 */
export function deepseekReasoningMissing(
  dialect: ProviderDialect,
  route: ProviderRoute,
  body: unknown,
): ErrorReply | undefined {
  if (dialect !== 'deepseek' || route !== 'openai-chat') return undefined
  if (typeof body !== 'object' || body === null) return undefined
  const json = body as Record<string, unknown>
  if (!thinks(json['model'], json['thinking'])) return undefined
  const messages = json['messages']
  if (!Array.isArray(messages)) return undefined
  const at = firstWithoutReasoning(messages)
  if (at === undefined) return undefined
  const model = typeof json['model'] === 'string' ? json['model'] : ''
  return refusal(
    V4.test(model)
      ? 'The `reasoning_content` in the thinking mode must be passed back to the API.'
      : `Missing \`reasoning_content\` field in the assistant message at message index ${at}. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls`,
  )
}

/** Whether the request runs in thinking mode: asked for, or the model's default and not turned off. */
function thinks(model: unknown, thinking: unknown): boolean {
  const type =
    typeof thinking === 'object' && thinking !== null
      ? (thinking as { type?: unknown }).type
      : undefined
  if (type === 'enabled') return true
  if (type === 'disabled') return false
  return typeof model === 'string' && THINKS_BY_DEFAULT.test(model)
}

/**
 * The index of the first assistant message without a string
 * `reasoning_content` in a user turn (the messages between two user
 * messages) in which the model called tools; undefined when there is none.
 */
function firstWithoutReasoning(messages: unknown[]): number | undefined {
  let first: number | undefined
  let start = 0
  const close = (end: number) => {
    let called = false
    let missing: number | undefined
    for (let i = start; i < end; i++) {
      const message = messages[i] as Record<string, unknown> | null
      if (typeof message !== 'object' || message === null || message['role'] !== 'assistant')
        continue
      const calls = message['tool_calls']
      if (Array.isArray(calls) && calls.length > 0) called = true
      if (missing === undefined && typeof message['reasoning_content'] !== 'string') missing = i
    }
    if (called && missing !== undefined && first === undefined) first = missing
  }
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i] as { role?: unknown } | null
    if (typeof message !== 'object' || message === null || message.role !== 'user') continue
    close(i)
    start = i + 1
  }
  close(messages.length)
  return first
}

function refusal(message: string): ErrorReply {
  return {
    kind: 'error',
    status: 400,
    body: {
      error: { message, type: 'invalid_request_error', param: null, code: 'invalid_request_error' },
    },
    headers: {},
  }
}
