import { expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import type { ChatMessage } from '../../src/types.js'

// A tool result placed before its call is named from any call of its id in
// the history, and that map was built again, over the whole history, for
// each such result: 5,000 of them took 2.8 s, 20,000 (a 1 MB gateway body)
// 22 s. Built once now: 30,000 in ~0.3 s, so the 30 s timeout leaves two
// orders of magnitude for a busy machine.
it('30,000 tool results before their call are named in linear time', { timeout: 30_000 }, () => {
  const n = 30_000
  const messages: ChatMessage[] = [{ role: 'user', content: 'hi' }]
  for (let i = 0; i < n; i++) {
    messages.push({
      role: 'tool',
      content: [{ type: 'tool_result', toolCallId: 'x', content: `${i}` }],
    })
  }
  messages.push(
    {
      role: 'assistant',
      content: [{ type: 'tool_call', id: 'x', name: 'weather', arguments: {} }],
    },
    { role: 'user', content: 'go' },
  )
  const { body } = dialects.gemini.buildRequest({ maxTokens: 10, messages }, 'gemini-2.5-flash')
  const contents = body['contents'] as Array<{
    role: string
    parts: Array<Record<string, unknown>>
  }>
  const responses = contents[0]?.parts.filter((p) => p['functionResponse'] !== undefined) ?? []
  expect(responses.length).toBe(n)
  expect(responses[n - 1]?.['functionResponse']).toEqual({
    id: 'x',
    name: 'weather',
    response: { result: `${n - 1}` },
  })
})
