import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import { isInvalidChatRequest } from '../../src/errors/InvalidChatRequestError.js'
import type { ChatMessage } from '../../src/types.js'
import { useFakes } from '../call/support/fakes.js'

/**
 * Tool-call arguments (or a tool result) that JSON cannot hold — a BigInt id
 * from a database driver, an object that refers to itself — failed the call
 * with a raw `TypeError: Do not know how to serialize a BigInt` /
 * `Converting circular structure to JSON` from inside a request builder,
 * naming no message. Every dialect refuses them as InvalidChatRequestError
 * naming the message and the call, before anything is sent.
 */

const fakes = useFakes()

function cyclic(): Record<string, unknown> {
  const order: Record<string, unknown> = { id: 7 }
  order['self'] = order
  return order
}

function history(args: unknown, result: unknown = '{"ok":true}'): ChatMessage[] {
  return [
    { role: 'user', content: 'refund order 7' },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Looking it up.' },
        { type: 'tool_call', id: 'call_ok', name: 'lookup', arguments: { id: 7 } },
        { type: 'tool_call', id: 'call_bad', name: 'refund', arguments: args as never },
      ],
    },
    {
      role: 'tool',
      content: [
        { type: 'tool_result', toolCallId: 'call_ok', content: 'found' },
        { type: 'tool_result', toolCallId: 'call_bad', content: result as never },
      ],
    },
  ]
}

const DIALECTS = ['openai', 'anthropic', 'gemini', 'deepseek', 'ernie', 'qwen', 'doubao'] as const

function refusal(name: (typeof DIALECTS)[number], messages: ChatMessage[]): unknown {
  try {
    JSON.stringify(dialects[name].buildRequest({ messages, maxTokens: 16 }, 'm').body)
  } catch (error) {
    return error
  }
  return undefined
}

describe('tool values JSON cannot hold', () => {
  it.each(DIALECTS)(
    '%s: arguments with a BigInt or a cycle are refused naming the call',
    (name) => {
      for (const args of [{ orderId: 2n ** 64n }, cyclic()]) {
        const error = refusal(name, history(args))
        expect(isInvalidChatRequest(error), String(error)).toBe(true)
        expect(error).toMatchObject({
          code: 'INVALID_CHAT_REQUEST',
          field: 'messages[1].tool_calls[1].function.arguments',
        })
        expect((error as Error).message).toContain('tool call "call_bad" ("refund")')
      }
    },
  )

  it.each(DIALECTS)(
    '%s: a tool result that is no text and holds a BigInt or a cycle is refused',
    (name) => {
      for (const result of [{ refunded: 10n }, cyclic()]) {
        const error = refusal(name, history({ id: 7 }, result))
        expect(isInvalidChatRequest(error), String(error)).toBe(true)
        expect(error).toMatchObject({ field: 'messages[2].content[1].content' })
        expect((error as Error).message).toContain('tool call "call_bad"')
      }
    },
  )

  it("OpenAI's wire sends a call's rawArguments as they are: a BigInt in the parsed value is not refused there", () => {
    const messages = history({ orderId: 1n })
    const blocks = messages[1]?.content as { type: string; rawArguments?: string }[]
    Object.assign(blocks[2] ?? {}, { rawArguments: '{"orderId":1}' })
    expect(refusal('openai', messages)).toBeUndefined()
    expect(isInvalidChatRequest(refusal('anthropic', messages))).toBe(true)
  })

  it('callModel: the typed error, and not a byte sent', async () => {
    const fake = await fakes.start({ dialect: 'anthropic', reply: reply.text('done') })
    const model = fakes.adapterFor('anthropic', fake.baseURL, 'claude-sonnet-4-5')
    const error = await callModel({
      models: [model],
      request: { messages: history({ orderId: 2n ** 64n }), maxTokens: 16 },
    }).catch((e: unknown) => e)
    expect(isInvalidChatRequest(error), String(error)).toBe(true)
    expect(error).toMatchObject({ field: 'messages[1].tool_calls[1].function.arguments' })
    expect(fake.requests).toHaveLength(0)
  })
})
