import { InvalidChatRequestError } from '../errors/InvalidChatRequestError.js'
import type { ChatRequest } from '../types.js'
import { blocksOf } from './blocks.js'

/**
 * Half of a surrogate pair with no other half: with the `u` flag a whole
 * pair (an emoji) reads as one code point and does not match.
 */
const LONE_SURROGATE = /\p{Surrogate}/u

/**
 * A lone UTF-16 surrogate (`"a\ud83d"`, valid JSON: a string cut inside an
 * emoji) has no UTF-8 form. JSON.stringify writes it as a `\ud83d` escape,
 * which a strict parser refuses: Anthropic answers 400 "The request body is
 * not valid JSON: no low surrogate in string: line 1 column 91" (anthropics/
 * claude-code#3277, #8272), DeepSeek "messages[3].content: lone leading
 * surrogate in hex escape" (JohnnyZ93/oai-compatible-copilot#206) — a bad
 * request that names no field the caller knows, blames JSON the caller
 * wrote validly, and never falls back. Refused here instead, before
 * anything is sent, naming the field. Not replaced by U+FFFD: that would
 * send text the caller never wrote. Every string that reaches the body is
 * read: messages (text, thinking, tool calls, tool results), tools, stop
 * sequences, and the other fields passed through (`extra`).
 */
export function refuseLoneSurrogates(request: ChatRequest, provider: string): void {
  const messages = request.messages
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]
    if (message === undefined) continue
    if (hasLoneSurrogate(message.name)) refuse(`messages[${i}].name`, provider)
    let toolCalls = 0
    for (const block of blocksOf(message)) {
      if (block.type === 'tool_call') {
        const at = `messages[${i}].tool_calls[${toolCalls++}]`
        if (hasLoneSurrogate(block.id)) refuse(`${at}.id`, provider)
        if (hasLoneSurrogate(block.name)) refuse(`${at}.function.name`, provider)
        if (hasLoneSurrogate(block.arguments)) refuse(`${at}.function.arguments`, provider)
      } else if (block.type === 'tool_result' && hasLoneSurrogate(block.toolCallId)) {
        refuse(`messages[${i}].tool_call_id`, provider)
      } else if (hasLoneSurrogate(block)) {
        refuse(`messages[${i}].content`, provider)
      }
    }
  }
  request.tools?.forEach((tool, i) => {
    if (hasLoneSurrogate(tool)) refuse(`tools[${i}]`, provider)
  })
  request.stop?.forEach((sequence, i) => {
    if (hasLoneSurrogate(sequence))
      refuse(request.stop?.length === 1 ? 'stop' : `stop[${i}]`, provider)
  })
  for (const [field, value] of Object.entries(request.extra ?? {})) {
    if (hasLoneSurrogate(field) || hasLoneSurrogate(value)) refuse(field, provider)
  }
}

function refuse(field: string, provider: string): never {
  throw new InvalidChatRequestError(
    field,
    `${provider} refuses a lone half of a surrogate pair (a string cut inside an emoji?): it has no UTF-8 form, and its JSON escape is invalid JSON to ${provider}; send the whole character, or none`,
  )
}

/**
 * True when a string in `value` (keys too) holds a lone surrogate. A loop
 * with its own stack, not recursion: tool arguments may be nested deeper
 * than the call stack goes; an object seen before (a cycle in `extra`,
 * which JSON.stringify refuses later) is not read again.
 */
function hasLoneSurrogate(value: unknown): boolean {
  if (typeof value === 'string') return LONE_SURROGATE.test(value)
  if (typeof value !== 'object' || value === null) return false
  const pending: unknown[] = [value]
  const seen = new Set<object>()
  while (pending.length > 0) {
    const next = pending.pop()
    if (typeof next === 'string') {
      if (LONE_SURROGATE.test(next)) return true
    } else if (typeof next === 'object' && next !== null && !seen.has(next)) {
      seen.add(next)
      if (Array.isArray(next)) for (const item of next) pending.push(item)
      else for (const [key, item] of Object.entries(next)) pending.push(key, item)
    }
  }
  return false
}
