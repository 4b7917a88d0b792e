import { describe, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import type { ChatMessage } from '../../src/types.js'

/** A history where the model called two tools and got their results. */
const afterTools: ChatMessage[] = [
  { role: 'user', content: 'weather and time in Paris' },
  {
    role: 'assistant',
    content: [
      { type: 'tool_call', id: 'c1', name: 'weather', arguments: { city: 'Paris' } },
      { type: 'tool_call', id: 'c2', name: 'time', arguments: {} },
      { type: 'tool_call', id: 'c3', name: 'weather', arguments: { city: 'Lyon' } },
    ],
  },
  { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'c1', content: 'sunny' }] },
  { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'c2', content: '12:00' }] },
  { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'c3', content: 'rain' }] },
  { role: 'user', content: 'now sum it up' },
]

const build = (messages: ChatMessage[], extra?: Record<string, unknown>, withTools = false) =>
  dialects.anthropic.buildRequest(
    {
      maxTokens: 10,
      messages,
      ...(withTools ? { tools: [{ name: 'weather', parameters: { type: 'object' } }] } : {}),
      ...(extra === undefined ? {} : { extra }),
    },
    'claude-sonnet-4-5',
  ).body

describe('a history with tool calls, sent without tools', () => {
  it('declares the functions it called, each once, with tool_choice none (Anthropic refuses tool blocks without tools)', () => {
    const body = build(afterTools)
    expect(body['tools']).toEqual([
      { name: 'weather', input_schema: { type: 'object' } },
      { name: 'time', input_schema: { type: 'object' } },
    ])
    expect(body['tool_choice']).toEqual({ type: 'none' })
  })

  it('does so too when the client said tool_choice none or auto, or parallel_tool_calls, without tools', () => {
    for (const extra of [
      { tool_choice: 'none' },
      { tool_choice: 'auto' },
      { parallel_tool_calls: false },
    ]) {
      const body = build(afterTools, extra)
      expect(body['tool_choice']).toEqual({ type: 'none' })
      expect((body['tools'] as unknown[]).length).toBe(2)
    }
  })

  it("leaves the client's own tools and choice as they are", () => {
    const body = build(afterTools, { tool_choice: 'auto' }, true)
    expect(body['tools']).toEqual([{ name: 'weather', input_schema: { type: 'object' } }])
    expect(body['tool_choice']).toEqual({ type: 'auto' })
  })

  it('adds nothing to a history without tool calls', () => {
    const body = build([{ role: 'user', content: 'hi' }])
    expect(body['tools']).toBeUndefined()
    expect(body['tool_choice']).toBeUndefined()
  })
})
