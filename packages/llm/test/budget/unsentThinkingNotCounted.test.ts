import { describe, expect, it } from 'vitest'
import { estimatePromptTokens } from '../../src/budget/estimatePromptTokens.js'
import type { ChatMessage } from '../../src/types.js'

/**
 * A client's earlier answers pushed back with their thinking (the gateway's
 * `reasoning_content`: an unsigned thinking block) go out only to DeepSeek.
 * Counted for every dialect, 9 kB of reasoning sent nowhere made a short
 * prompt a long one: routed to the large model, refused 402 against a cost
 * budget it fitted, weighed against TPM.
 */
describe('estimatePromptTokens and thinking a dialect does not send', () => {
  const history = (signature?: string): { messages: ChatMessage[] } => ({
    messages: [
      { role: 'user', content: 'hi' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'x'.repeat(9000), ...(signature ? { signature } : {}) },
          { type: 'text', text: 'hello' },
        ],
      },
      { role: 'user', content: 'and then?' },
    ],
  })
  const bare = estimatePromptTokens({
    messages: [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: [{ type: 'text', text: 'hello' }] },
      { role: 'user', content: 'and then?' },
    ],
  })

  it('leaves unsigned thinking out but for DeepSeek, which is sent it', () => {
    expect(estimatePromptTokens(history())).toBe(bare)
    expect(estimatePromptTokens(history(), 'openai')).toBe(bare)
    expect(estimatePromptTokens(history(), 'deepseek')).toBeGreaterThan(bare + 2000)
  })

  it('counts signed thinking, which goes back to Anthropic and Gemini', () => {
    expect(estimatePromptTokens(history('sig'), 'anthropic')).toBeGreaterThan(bare + 2000)
    expect(estimatePromptTokens(history('sig'))).toBeGreaterThan(bare + 2000)
  })
})
