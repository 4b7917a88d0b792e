import { describe, expect, it } from 'vitest'
import { stripThinkingSignatures } from '../../src/call/stripThinkingSignatures.js'
import type { ChatMessage } from '../../src/types.js'

describe('stripThinkingSignatures', () => {
  it('removes signatures, keeps the thinking text, and never mutates the input', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'plan it' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'step 1, step 2', signature: 'EqQBCkYIBxgCKkA…' },
          { type: 'text', text: 'Done.' },
          { type: 'tool_call', id: 't1', name: 'run', arguments: { x: 1 } },
        ],
      },
    ]
    const frozen = structuredClone(messages)
    const stripped = stripThinkingSignatures(messages)
    expect(stripped).toEqual([
      { role: 'user', content: 'plan it' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'step 1, step 2' },
          { type: 'text', text: 'Done.' },
          { type: 'tool_call', id: 't1', name: 'run', arguments: { x: 1 } },
        ],
      },
    ])
    expect(JSON.stringify(stripped)).not.toContain('signature')
    expect(messages).toEqual(frozen)
    expect(stripped).not.toBe(messages)
  })

  it('drops thinking blocks that were only a signature (nothing left to send)', () => {
    const stripped = stripThinkingSignatures([
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: '', signature: 'redacted' },
          { type: 'text', text: 'ok' },
        ],
      },
    ])
    expect(stripped[0]!.content).toEqual([{ type: 'text', text: 'ok' }])
  })

  it("keeps the field the thinking was said under: the fallback's adapter picks the name it replays", () => {
    const stripped = stripThinkingSignatures([
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'vLLM thought', field: 'reasoning', signature: 's' },
          { type: 'text', text: 'ok' },
        ],
      },
    ])
    expect(stripped[0]!.content).toEqual([
      { type: 'thinking', thinking: 'vLLM thought', field: 'reasoning' },
      { type: 'text', text: 'ok' },
    ])
  })
})
