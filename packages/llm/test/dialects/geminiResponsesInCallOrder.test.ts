import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import type { ChatMessage } from '../../src/types.js'

const call = (id: string, city: string) => ({
  type: 'tool_call' as const,
  id,
  name: 'weather',
  arguments: { city },
})
const result = (id: string, content: string): ChatMessage => ({
  role: 'tool',
  content: [{ type: 'tool_result', toolCallId: id, content }],
})

function partsSent(messages: ChatMessage[]) {
  const { body } = dialects.gemini.buildRequest({ maxTokens: 10, messages }, 'gemini-2.5-flash')
  const contents = body['contents'] as Array<{
    role: string
    parts: Array<Record<string, unknown>>
  }>
  return contents.map((c) =>
    c.parts.map((p) => {
      const response = p['functionResponse'] as { id: string; response: unknown } | undefined
      return response === undefined ? (p['text'] ?? 'call') : response.id
    }),
  )
}

describe('tool results sent to Gemini out of the order of their calls', () => {
  it('go in the order of the calls they answer (Gemini pairs them by place), text after them kept', () => {
    const sent = partsSent([
      { role: 'user', content: 'weather in Paris, Rome and Oslo' },
      { role: 'assistant', content: [call('a', 'Paris'), call('b', 'Rome'), call('c', 'Oslo')] },
      result('c', 'snow'),
      result('a', 'sunny'),
      result('b', 'rain'),
      { role: 'user', content: 'which is warmest?' },
    ])
    expect(sent[2]).toEqual(['a', 'b', 'c', 'which is warmest?'])
  })

  it('leave results already in order, and a single result, as they are', () => {
    const sent = partsSent([
      { role: 'user', content: 'two cities' },
      { role: 'assistant', content: [call('a', 'Paris'), call('b', 'Rome')] },
      result('a', 'sunny'),
      result('b', 'rain'),
      { role: 'assistant', content: [call('c', 'Oslo')] },
      result('c', 'snow'),
    ])
    expect(sent).toEqual([['two cities'], ['call', 'call'], ['a', 'b'], ['call'], ['c']])
  })
})
