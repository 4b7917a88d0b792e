import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import { isInvalidChatRequest } from '../../src/errors/InvalidChatRequestError.js'
import type { ChatMessage } from '../../src/types.js'

const call: ChatMessage = {
  role: 'assistant',
  content: [{ type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } }],
}

function build(messages: ChatMessage[]) {
  return dialects.openai.buildRequest({ messages, maxTokens: 16 }, 'gpt-4o')
}

function refusal(messages: ChatMessage[]): unknown {
  try {
    build(messages)
  } catch (error) {
    return error
  }
  return undefined
}

describe('OpenAI’s wire: what it has no place for is refused, not dropped', () => {
  it('a tool message of text (no tool_result block): refused naming its content — it used to vanish from the request', () => {
    const error = refusal([
      { role: 'user', content: 'weather?' },
      call,
      { role: 'tool', content: 'sunny' },
    ])
    expect(isInvalidChatRequest(error)).toBe(true)
    expect(error).toMatchObject({ field: 'messages[2].content' })
  })

  it('text beside a tool result in a tool message: refused (the result alone went)', () => {
    const error = refusal([
      { role: 'user', content: 'weather?' },
      call,
      {
        role: 'tool',
        content: [
          { type: 'tool_result', toolCallId: 'call_1', content: 'sunny' },
          { type: 'text', text: 'and tell me in French' },
        ],
      },
    ])
    expect(isInvalidChatRequest(error)).toBe(true)
    expect(error).toMatchObject({ field: 'messages[2].content' })
  })

  it('a tool_call block in a user message: refused (only an assistant message carries tool_calls)', () => {
    const error = refusal([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'run this' },
          { type: 'tool_call', id: 'c', name: 'f', arguments: {} },
        ],
      },
    ])
    expect(isInvalidChatRequest(error)).toBe(true)
    expect(error).toMatchObject({ field: 'messages[0].content' })
  })

  it('tool results, an empty tool message and text in a user turn after results still go', () => {
    const built = build([
      { role: 'user', content: 'weather?' },
      call,
      { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'call_1', content: 'sunny' }] },
      { role: 'tool', content: '' },
      {
        role: 'user',
        content: [
          { type: 'tool_result', toolCallId: 'call_1', content: 'again' },
          { type: 'text', text: 'thanks' },
        ],
      },
    ])
    expect((built.body as { messages: unknown[] }).messages).toEqual([
      { role: 'user', content: 'weather?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      { role: 'tool', tool_call_id: 'call_1', content: 'again' },
      { role: 'user', content: 'thanks' },
    ])
  })
})
