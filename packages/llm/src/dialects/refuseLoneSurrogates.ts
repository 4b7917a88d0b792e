import {
  InvalidChatRequestError,
  LONE_SURROGATE_REFUSED,
} from '../errors/InvalidChatRequestError.js'
import type { ChatRequest, ContentBlock } from '../types.js'
import { blocksOf, textOf } from './blocks.js'

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
 * send text the caller never wrote.
 *
 * What is read is what the dialect's builder sends (`wire`), not the
 * request as the caller built it: a half that is never sent, or sent whole,
 * is no lone surrogate on the wire, and refusing it turned a valid request
 * into a 400. OpenAI's wire (DeepSeek) sends a message's text blocks joined
 * (an emoji split across two parts goes whole), a tool call's `rawArguments`
 * when kept (JSON text, whose `\ud83d` escapes are ASCII), object
 * arguments as JSON.stringify's text (escaped the same way) and no thinking;
 * Anthropic's sends each text block (a system message's text alone),
 * thinking only when signed, no message
 * name (its builder refuses one) and tool-call ids rewritten to ASCII
 * (`anthropicToolUseId`). Tools, stop sequences and the fields passed
 * through (`extra`) are read on both.
 */
export function refuseLoneSurrogates(
  request: ChatRequest,
  provider: string,
  wire: 'openai' | 'anthropic',
): void {
  const messages = request.messages
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]
    if (message === undefined) continue
    const blocks = blocksOf(message)
    if (wire === 'openai') {
      if (hasLoneSurrogate(message.name)) refuse(`messages[${i}].name`, provider)
      if (hasLoneSurrogate(textOf(blocks))) refuse(`messages[${i}].content`, provider)
    }
    let toolCalls = 0
    for (const block of blocks) {
      // Anthropic's `system` takes a system message's text alone.
      if (wire === 'anthropic' && message.role === 'system' && block.type !== 'text') continue
      if (hasLoneSurrogate(sentOf(block, wire))) refuse(`messages[${i}].content`, provider)
      if (block.type === 'tool_call') {
        const at = `messages[${i}].tool_calls[${toolCalls++}]`
        if (wire === 'openai' && hasLoneSurrogate(block.id)) refuse(`${at}.id`, provider)
        if (hasLoneSurrogate(block.name)) refuse(`${at}.function.name`, provider)
        const args = wire === 'openai' ? openAIArguments(block) : block.arguments
        if (hasLoneSurrogate(args)) refuse(`${at}.function.arguments`, provider)
      } else if (
        block.type === 'tool_result' &&
        wire === 'openai' &&
        hasLoneSurrogate(block.toolCallId)
      ) {
        refuse(`messages[${i}].tool_call_id`, provider)
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

/**
 * The text of a block that goes as `messages[i].content` on `wire`, one
 * block at a time: a tool result's content on both; on Anthropic's, a text
 * block and a signed thinking block (unsigned thinking is dropped, and a
 * redacted one sends its signature alone). OpenAI's text is read joined,
 * above; its thinking is not sent.
 */
function sentOf(block: ContentBlock, wire: 'openai' | 'anthropic'): unknown {
  if (block.type === 'tool_result') return block.content
  if (wire !== 'anthropic') return undefined
  if (block.type === 'text') return block.text
  if (block.type !== 'thinking' || !block.signature) return undefined
  return block.redacted === true ? block.signature : [block.thinking, block.signature]
}

/**
 * A tool call's arguments as OpenAI's wire carries them: the text kept
 * (`rawArguments`), or a string given as it is; an object goes as
 * JSON.stringify's text, whose lone surrogates are `\ud83d` escapes —
 * ASCII in that text, escaped once more in the body, no lone surrogate there.
 */
function openAIArguments(block: Extract<ContentBlock, { type: 'tool_call' }>): unknown {
  if (block.rawArguments !== undefined) return block.rawArguments
  return typeof block.arguments === 'string' ? block.arguments : undefined
}

/**
 * Throws the refusal for `field` when `text` holds a lone surrogate: for
 * text a dialect adds after its builder ran (DeepSeek's replayed thinking,
 * `replayThinking`), read by the same test.
 */
export function refuseLoneSurrogateIn(text: string, field: string, provider: string): void {
  if (LONE_SURROGATE.test(text)) refuse(field, provider)
}

function refuse(field: string, provider: string): never {
  throw new InvalidChatRequestError(
    field,
    `${provider} refuses a lone half of a surrogate pair (a string cut inside an emoji?): it has no UTF-8 form, and its JSON escape is invalid JSON to ${provider}; send the whole character, or none`,
    LONE_SURROGATE_REFUSED,
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
