import { expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'
import type { ChatMessage, ContentBlock } from '../../src/types.js'

// A turn was joined to the one before it of the same role with
// `push(...blocks)`: spread as arguments, a message of 130,000 text parts or
// more (3.5 MB through the gateway, within its body limit) overflowed the
// stack, "Maximum call stack size exceeded", and the gateway answered 500.
it.each(['anthropic', 'gemini'] as const)(
  '%s: a message of 140,000 text parts after one of the same role is one turn with all of them',
  (name) => {
    const parts: ContentBlock[] = Array.from({ length: 140_000 }, (_, i) => ({
      type: 'text',
      text: `p${i}`,
    }))
    const messages: ChatMessage[] = [
      { role: 'user', content: 'hi' },
      { role: 'user', content: parts },
    ]
    const { body } = dialects[name].buildRequest(
      { maxTokens: 10, messages },
      name === 'gemini' ? 'gemini-2.5-flash' : 'claude-sonnet-4-5',
    )
    const turns = (body['messages'] ?? body['contents']) as Array<Record<string, unknown[]>>
    expect(turns.length).toBe(1)
    const blocks = (turns[0]?.['content'] ?? turns[0]?.['parts']) as Array<{ text: string }>
    expect(blocks.length).toBe(140_001)
    expect(blocks.at(-1)?.text).toBe('p139999')
  },
)
