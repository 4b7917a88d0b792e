import { InvalidChatRequestError } from '../../errors/InvalidChatRequestError.js'
import type { ChatMessage, ChatRequest, ContentBlock, ToolDefinition } from '../../types.js'
import { parseArguments } from '../blocks.js'
import { asArray, asRecord, get, getRecord, getString } from '../safeJson.js'

export interface ParseOpenAIRequestOptions {
  /** Output cap when the client sends neither `max_tokens` nor `max_completion_tokens`. Default 4096. */
  defaultMaxTokens?: number | undefined
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool'])

/**
 * An OpenAI chat-completions request body (what a client sends a gateway) →
 * the model name it asked for and a normalised request. Throws
 * `InvalidChatRequestError` naming the first bad field; reads only own
 * properties, so hostile keys cannot reach in.
 */
export function parseOpenAIRequest(
  body: unknown,
  options: ParseOpenAIRequestOptions = {},
): { model: string; request: ChatRequest } {
  if (asRecord(body) === undefined) throw new InvalidChatRequestError('body', 'must be an object')
  const model = getString(body, 'model')
  if (!model) throw new InvalidChatRequestError('model', 'must be a non-empty string')
  const rawMessages = get(body, 'messages')
  if (!Array.isArray(rawMessages) || rawMessages.length === 0) {
    throw new InvalidChatRequestError('messages', 'must be a non-empty array')
  }
  const messages = rawMessages.map((m, i) => parseMessage(m, `messages[${i}]`))
  const maxTokens = get(body, 'max_completion_tokens') ?? get(body, 'max_tokens')
  if (maxTokens !== undefined && maxTokens !== null && !isPositiveInt(maxTokens)) {
    throw new InvalidChatRequestError('max_tokens', 'must be a positive integer')
  }
  const request: ChatRequest = {
    messages,
    maxTokens: isPositiveInt(maxTokens) ? maxTokens : (options.defaultMaxTokens ?? 4096),
  }
  const temperature = optionalNumber(body, 'temperature')
  if (temperature !== undefined) request.temperature = temperature
  const topP = optionalNumber(body, 'top_p')
  if (topP !== undefined) request.topP = topP
  const stop = get(body, 'stop')
  if (typeof stop === 'string') request.stop = [stop]
  else if (Array.isArray(stop)) request.stop = stop.filter((s) => typeof s === 'string')
  const tools = get(body, 'tools')
  if (Array.isArray(tools)) request.tools = tools.map((t, i) => parseTool(t, `tools[${i}]`))
  if (get(body, 'stream') === true) request.stream = true
  return { model, request }
}

function parseMessage(raw: unknown, path: string): ChatMessage {
  const role = getString(raw, 'role')
  if (role === undefined || !ROLES.has(role)) {
    throw new InvalidChatRequestError(`${path}.role`, 'must be system, user, assistant or tool')
  }
  const text = contentText(get(raw, 'content'), `${path}.content`)
  if (role === 'tool') {
    const toolCallId = getString(raw, 'tool_call_id')
    if (!toolCallId) throw new InvalidChatRequestError(`${path}.tool_call_id`, 'is required')
    return { role: 'tool', content: [{ type: 'tool_result', toolCallId, content: text }] }
  }
  if (role === 'assistant') {
    const blocks: ContentBlock[] = text === '' ? [] : [{ type: 'text', text }]
    asArray(get(raw, 'tool_calls')).forEach((call, i) => {
      const fn = getRecord(call, 'function')
      const id = getString(call, 'id')
      const name = getString(fn, 'name')
      if (!id || !name) {
        throw new InvalidChatRequestError(`${path}.tool_calls[${i}]`, 'needs id and function.name')
      }
      const args = getString(fn, 'arguments') ?? ''
      blocks.push({ type: 'tool_call', id, name, arguments: parseArguments(args) })
    })
    return { role: 'assistant', content: blocks }
  }
  return { role: role === 'developer' ? 'system' : (role as 'system' | 'user'), content: text }
}

/** Text content as a string or as text parts; other part types are refused by name. */
function contentText(content: unknown, path: string): string {
  if (content === undefined || content === null) return ''
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) throw new InvalidChatRequestError(path, 'must be a string or parts')
  return content
    .map((part, i) => {
      const type = getString(part, 'type')
      const text = getString(part, 'text')
      if (type !== 'text' || text === undefined) {
        throw new InvalidChatRequestError(`${path}[${i}]`, 'only text parts are supported')
      }
      return text
    })
    .join('')
}

function parseTool(raw: unknown, path: string): ToolDefinition {
  const fn = getRecord(raw, 'function')
  const name = getString(fn, 'name')
  if (!name) throw new InvalidChatRequestError(`${path}.function.name`, 'is required')
  const description = getString(fn, 'description')
  return {
    name,
    parameters: getRecord(fn, 'parameters') ?? { type: 'object', properties: {} },
    ...(description === undefined ? {} : { description }),
  }
}

function isPositiveInt(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0
}

function optionalNumber(body: unknown, key: string): number | undefined {
  const v = get(body, key)
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    throw new InvalidChatRequestError(key, 'must be a number')
  }
  return v
}
