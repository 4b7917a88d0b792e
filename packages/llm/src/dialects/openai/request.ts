import { InvalidChatRequestError } from '../../errors/InvalidChatRequestError.js'
import type { ChatMessage, ChatRequest } from '../../types.js'
import { blocksOf, stringifyArguments } from '../blocks.js'
import type { BuiltRequest } from '../Dialect.js'
import { requestToolSettings } from '../requestToolSettings.js'

export interface OpenAIRequestOptions {
  /**
   * OpenAI itself wants `max_completion_tokens` (its reasoning models refuse
   * `max_tokens`); the compatible providers (DeepSeek, Qwen, Qianfan, Ark)
   * document `max_tokens`. Default `max_tokens`.
   */
  maxTokensField?: 'max_tokens' | 'max_completion_tokens' | undefined
}

/**
 * Normalised request → `POST /chat/completions` body. Thinking blocks are
 * not sent: chat completions has no field for them (`openAICompatible`'s
 * `replayThinking` adds them — by default on dialect `deepseek`, to the
 * turns of a tool loop, which its thinking mode refuses without them).
 * Streaming asks for usage in the last chunk, which is how cost is known
 * for a streamed answer (the caller's other `stream_options` go with it).
 * `request.extra` (`response_format`,
 * `tool_choice`, `seed`, …), message names and tool-call arguments received
 * as text (`rawArguments`) are forwarded unchanged, but for tool settings in
 * a request without tools (`requestToolSettings`).
 */
export function buildOpenAIRequest(
  request: ChatRequest,
  model: string,
  options: OpenAIRequestOptions = {},
): BuiltRequest {
  const body: Record<string, unknown> = {
    model,
    messages: request.messages.flatMap(toOpenAIMessages),
    [options.maxTokensField ?? 'max_tokens']: request.maxTokens,
  }
  if (request.temperature !== undefined) body['temperature'] = request.temperature
  if (request.topP !== undefined) body['top_p'] = request.topP
  if (request.stop !== undefined && request.stop.length > 0) body['stop'] = request.stop
  if (request.tools !== undefined && request.tools.length > 0) {
    body['tools'] = request.tools.map((tool) => {
      // Set field by field: on Node 20 a field after a spread costs ~0.4 µs.
      const fn: Record<string, unknown> = { name: tool.name }
      if (tool.description !== undefined) fn['description'] = tool.description
      fn['parameters'] = tool.parameters
      if (tool.strict !== undefined) fn['strict'] = tool.strict
      return { type: 'function', function: fn }
    })
  }
  if (request.stream) {
    body['stream'] = true
    body['stream_options'] = streamOptions(request.extra?.['stream_options'])
  }
  // A `ChatResponse` (and a stream's events) holds one choice: more were
  // billed and then dropped (a whole answer's `choices[1]`), or streamed
  // into one answer (each chunk names its choice by `index`; the parser
  // reads the first choice of every chunk). Refused before anything is sent.
  const n = request.extra?.['n']
  if (n !== undefined && n !== null && n !== 1) {
    throw new InvalidChatRequestError('n', 'only 1: an answer holds one choice')
  }
  refuseOwnFields(request)
  // The client's other fields travel as sent (but tool settings without
  // tools, see requestToolSettings); never over a field built above.
  for (const [key, value] of Object.entries(requestToolSettings(request) ?? {})) {
    if (Object.hasOwn(body, key) || value === undefined) continue
    setField(body, key, value)
  }
  return { path: '/chat/completions', body }
}

/** Usage is always asked for (it prices the call); the caller's other options go as sent. */
function streamOptions(asked: unknown): Record<string, unknown> {
  const options: Record<string, unknown> = { include_usage: true }
  if (typeof asked !== 'object' || asked === null) return options
  for (const key of Object.keys(asked)) {
    const value = (asked as Record<string, unknown>)[key]
    if (key !== 'include_usage' && value !== undefined && value !== null) {
      setField(options, key, value)
    }
  }
  return options
}

/** defineProperty: a key named `__proto__` stays a field instead of becoming the prototype. */
function setField(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  })
}

/** One normalised message can become several: each tool result is its own `tool` message. */
function toOpenAIMessages(message: ChatMessage, index: number): Record<string, unknown>[] {
  const blocks = blocksOf(message)
  const text = blocks
    .filter((b) => b.type === 'text')
    .map((b) => b.text)
    .join('')
  const out: Record<string, unknown>[] = []
  for (const block of blocks) {
    if (block.type === 'tool_result') {
      out.push({ role: 'tool', tool_call_id: block.toolCallId, content: block.content })
    }
  }
  const toolCalls = blocks.flatMap((b) =>
    b.type === 'tool_call'
      ? [
          {
            id: b.id,
            type: 'function',
            // The text as received when there is one: re-serialising the parsed
            // value would round big integers and unquote a JSON string.
            function: {
              name: b.name,
              arguments: b.rawArguments ?? stringifyArguments(b.arguments),
            },
          },
        ]
      : [],
  )
  refuseUnsendable(message, index, text, toolCalls.length)
  let named: Record<string, unknown> | undefined
  if (message.role === 'assistant') {
    named = { role: 'assistant', content: text === '' && toolCalls.length > 0 ? null : text }
    if (toolCalls.length > 0) named['tool_calls'] = toolCalls
  } else if (message.role !== 'tool' && (text !== '' || out.length === 0)) {
    named = { role: message.role, content: text }
  }
  if (message.name !== undefined) {
    // Tool results go as `tool` messages, which carry no name.
    if (named === undefined) {
      throw new InvalidChatRequestError(
        `messages[${index}].name`,
        'only a system, user or assistant message carries a name',
      )
    }
    named['name'] = message.name
  }
  if (named !== undefined) out.push(named)
  return out
}

/**
 * What chat completions has no place for, refused rather than left out (the
 * builder used to drop it without a word): a `tool` message is one tool
 * result per `tool_call_id`, so its text went nowhere — the model answered
 * without the tool's output, or the provider refused the tool call left
 * unanswered, where Anthropic and Gemini send that text in the user turn —,
 * and only an assistant message carries `tool_calls`.
 */
function refuseUnsendable(
  message: ChatMessage,
  index: number,
  text: string,
  toolCalls: number,
): void {
  if (message.role === 'tool' && text !== '') {
    throw new InvalidChatRequestError(
      `messages[${index}].content`,
      "a tool message's text has no place on OpenAI's wire, where a tool message is one tool result: send the output as a tool_result block with its toolCallId, or the text as a user message",
    )
  }
  if (message.role !== 'assistant' && toolCalls > 0) {
    throw new InvalidChatRequestError(
      `messages[${index}].content`,
      `a tool_call block has no place in a ${message.role} message on OpenAI's wire: only an assistant message makes tool calls`,
    )
  }
}

/**
 * What the request's own fields set, given again in `extra`: the field not
 * built above went out beside them. `stream: true` on a whole-answer call
 * had the provider stream an answer read as JSON — no JSON, so asked again,
 * each generation billed (three by default) and none returned; a
 * `max_tokens` beside OpenAI's `max_completion_tokens` (or
 * `max_completion_tokens` beside a compatible provider's `max_tokens`) is
 * OpenAI's 400, or another cap than the `maxTokens` a cost budget held the
 * attempt's worst case by.
 */
function refuseOwnFields(request: ChatRequest): void {
  const extra = request.extra
  if (extra === undefined) return
  const stream = extra['stream']
  if (stream !== undefined && stream !== null && stream !== (request.stream === true)) {
    throw new InvalidChatRequestError(
      'stream',
      `set by the request's own \`stream\` (${request.stream === true}), got ${String(stream)} in extra`,
    )
  }
  for (const field of ['max_tokens', 'max_completion_tokens']) {
    const value = extra[field]
    if (value === undefined || value === null) continue
    throw new InvalidChatRequestError(
      field,
      "the output cap is the request's own `maxTokens` (sent under the field the provider reads), not an extra field",
    )
  }
}
