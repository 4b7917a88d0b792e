import { anthropicErrors } from './errors/anthropicErrors.js'
import type { ErrorReply, ProviderDialect, ProviderRoute } from './types.js'

/**
 * The 400 OpenAI and Anthropic answer a history whose tool calls and tool
 * results do not pair up; undefined for any other request. The fake
 * answered 200, so an agent loop that lost a tool result (a sliding window
 * that cut the pair, a crashed tool whose result was never appended, a
 * parallel call answered once) or replayed a result without its call passed
 * its tests and failed its next request against the API:
 * - OpenAI chat (the `openai` dialect, as the other OpenAI-only refusals):
 *   an assistant message with `tool_calls` not followed by a `tool` message
 *   for each id — "An assistant message with 'tool_calls' must be followed
 *   by tool messages responding to each 'tool_call_id'. The following
 *   tool_call_ids did not have response messages: call_…" —, and a `tool`
 *   message after no such assistant message — "Invalid parameter: messages
 *   with role 'tool' must be a response to a preceeding message with
 *   'tool_calls'." (sic), `param: "messages.[N].role"`, `code: null`;
 * - Anthropic (the `anthropic` dialect): "messages.N: `tool_use` ids were
 *   found without `tool_result` blocks immediately after: toolu_…. Each
 *   `tool_use` block must have a corresponding `tool_result` block in the
 *   next message." and "messages.N.content.M: unexpected `tool_use_id`
 *   found in `tool_result` blocks: toolu_…. Each `tool_result` block must
 *   have a corresponding `tool_use` block in the previous message."
 *   (`invalid_request_error`; live 400s quoted in anthropics/claude-code#5989,
 *   #1237 and elsewhere). A final assistant message (a prefill) is not held
 *   to a next message.
 */
export function toolPairingRefused(
  dialect: ProviderDialect,
  route: ProviderRoute,
  body: unknown,
): ErrorReply | undefined {
  const messages = (body as { messages?: unknown } | null)?.messages
  if (!Array.isArray(messages)) return undefined
  if (dialect === 'openai' && route === 'openai-chat') return openAIPairing(messages)
  if (dialect === 'anthropic' && route === 'anthropic-messages') return anthropicPairing(messages)
  return undefined
}

/**
 * Gemini's 400 for a turn whose `functionResponse` parts do not match, in
 * number, the `functionCall` parts of the turn before it (a model turn
 * whose calls were answered by fewer or more responses, or responses after
 * a turn that called nothing): `INVALID_ARGUMENT` "Please ensure that the
 * number of function response parts is equal to the number of function
 * call parts of the function call turn." (live 400s quoted in
 * google-gemini/gemini-cli#5443, #16984 and others). The fake answered
 * 200, so an agent loop that dropped one of two parallel results passed
 * against it. A model turn last in `contents` (nothing answers it yet) is
 * not held to one.
 */
export function geminiPairingRefused(route: ProviderRoute, body: unknown): ErrorReply | undefined {
  const contents = (body as { contents?: unknown } | null)?.contents
  if (route !== 'gemini' || !Array.isArray(contents)) return undefined
  const count = (content: unknown, key: string) => {
    const parts = obj(content)['parts']
    return Array.isArray(parts) ? parts.filter((p) => obj(p)[key] !== undefined).length : 0
  }
  for (let i = 0; i < contents.length; i++) {
    const responses = count(contents[i], 'functionResponse')
    const calls = i > 0 ? count(contents[i - 1], 'functionCall') : 0
    const callsHere = count(contents[i], 'functionCall')
    const answered =
      i < contents.length - 1 ? count(contents[i + 1], 'functionResponse') : callsHere
    if ((responses > 0 && responses !== calls) || (callsHere > 0 && answered !== callsHere)) {
      const message =
        'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.'
      return {
        kind: 'error',
        status: 400,
        body: { error: { code: 400, message, status: 'INVALID_ARGUMENT' } },
      }
    }
  }
  return undefined
}

type Json = Record<string, unknown>
const obj = (v: unknown): Json => (typeof v === 'object' && v !== null ? (v as Json) : {})

function openAIPairing(messages: unknown[]): ErrorReply | undefined {
  for (let i = 0; i < messages.length; i++) {
    const m = obj(messages[i])
    if (m['role'] === 'tool') {
      // A tool message answers the nearest assistant message before it, through other tool messages only.
      let j = i - 1
      while (j >= 0 && obj(messages[j])['role'] === 'tool') j--
      const calls = j >= 0 ? obj(messages[j])['tool_calls'] : undefined
      if (!(obj(messages[j])['role'] === 'assistant' && Array.isArray(calls) && calls.length > 0)) {
        return openAIRefusal(
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          `messages.[${i}].role`,
        )
      }
    }
    const calls = m['tool_calls']
    if (m['role'] !== 'assistant' || !Array.isArray(calls) || calls.length === 0) continue
    const answered = new Set<unknown>()
    for (let k = i + 1; k < messages.length && obj(messages[k])['role'] === 'tool'; k++) {
      answered.add(obj(messages[k])['tool_call_id'])
    }
    const missing = calls.map((c) => obj(c)['id']).filter((id) => !answered.has(id))
    if (missing.length > 0) {
      return openAIRefusal(
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.map(String).join(', ')}`,
        `messages.[${i}].role`,
      )
    }
  }
  return undefined
}

function openAIRefusal(message: string, param: string): ErrorReply {
  return {
    kind: 'error',
    status: 400,
    body: { error: { message, type: 'invalid_request_error', param, code: null } },
  }
}

const blocks = (m: Json): Json[] => (Array.isArray(m['content']) ? m['content'].map(obj) : [])

function anthropicPairing(messages: unknown[]): ErrorReply | undefined {
  for (let i = 0; i < messages.length; i++) {
    const m = obj(messages[i])
    if (m['role'] === 'user') {
      const prev = i > 0 ? obj(messages[i - 1]) : {}
      const uses = new Set(
        prev['role'] === 'assistant'
          ? blocks(prev)
              .filter((b) => b['type'] === 'tool_use')
              .map((b) => b['id'])
          : [],
      )
      const content = blocks(m)
      for (let k = 0; k < content.length; k++) {
        const b = content[k] as Json
        if (b['type'] === 'tool_result' && !uses.has(b['tool_use_id'])) {
          return anthropicRefusal(
            `messages.${i}.content.${k}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(b['tool_use_id'])}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          )
        }
      }
    }
    if (m['role'] !== 'assistant' || i === messages.length - 1) continue
    const ids = blocks(m)
      .filter((b) => b['type'] === 'tool_use')
      .map((b) => b['id'])
    if (ids.length === 0) continue
    const next = obj(messages[i + 1])
    const results = new Set(
      next['role'] === 'user'
        ? blocks(next)
            .filter((b) => b['type'] === 'tool_result')
            .map((b) => b['tool_use_id'])
        : [],
    )
    const missing = ids.filter((id) => !results.has(id))
    if (missing.length > 0) {
      return anthropicRefusal(
        `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.map(String).join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
      )
    }
  }
  return undefined
}

function anthropicRefusal(message: string): ErrorReply {
  return anthropicErrors.invalidRequest(message)
}
