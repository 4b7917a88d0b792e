import { quoted } from '@hourglass/core'
import { InvalidChatRequestError } from '../errors/InvalidChatRequestError.js'
import type { ChatRequest } from '../types.js'
import { blocksOf } from './blocks.js'

/**
 * Refuses a tool call's arguments, or a tool result's content, that
 * `JSON.stringify` cannot write: a BigInt (an id from a database driver), an
 * object that refers to itself, one nested deeper than the stack allows.
 * Each builder wrote them as they came, and the call failed with a raw
 * `TypeError: Do not know how to serialize a BigInt` or `Converting
 * circular structure to JSON` from inside it, naming nothing the caller
 * could find in a long history. Refused here instead, before anything is
 * sent, naming the message and the call. Every builder asks (OpenAI's wire,
 * Anthropic's, Gemini's): one check, not one per dialect.
 *
 * `textOnWire`: OpenAI's wire sends a call's `rawArguments` as they are,
 * so a call that kept them is sent whatever its parsed value holds.
 * Anthropic and Gemini write the object.
 */
export function refuseUnwritableToolValues(request: ChatRequest, textOnWire: boolean): void {
  const messages = request.messages
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]
    if (message === undefined || typeof message.content === 'string') continue
    const blocks = blocksOf(message)
    let toolCalls = 0
    for (let j = 0; j < blocks.length; j++) {
      const block = blocks[j]
      if (block?.type === 'tool_call') {
        const at = `messages[${i}].tool_calls[${toolCalls++}].function.arguments`
        if (textOnWire && block.rawArguments !== undefined) continue
        const why = unwritable(block.arguments)
        if (why !== undefined) {
          throw new InvalidChatRequestError(
            at,
            `the arguments of tool call ${quoted(String(block.id), 60)} (${quoted(String(block.name), 60)}) cannot be sent as JSON: ${why}`,
          )
        }
      } else if (block?.type === 'tool_result') {
        const why = unwritable(block.content)
        if (why !== undefined) {
          throw new InvalidChatRequestError(
            `messages[${i}].content[${j}].content`,
            `the result of tool call ${quoted(String(block.toolCallId), 60)} cannot be sent as JSON: ${why}`,
          )
        }
      }
    }
  }
}

/** Why `value` cannot be written as JSON, or undefined when it can (text always can). */
function unwritable(value: unknown): string | undefined {
  if (typeof value === 'string' || value === undefined || value === null) return undefined
  try {
    JSON.stringify(value)
    return undefined
  } catch (error) {
    if (error instanceof RangeError) return 'it is nested deeper than JSON.stringify can write'
    const message = error instanceof Error ? error.message : String(error)
    // V8's text for a cycle names where it closes, over several lines.
    return message.split('\n').join(' ').replace(/\s+/g, ' ').trim()
  }
}
