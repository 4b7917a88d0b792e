import type { ChatResponse } from '../../src/types.js'

/**
 * A model's answer of `content`, as a stub `call` returns it: its text the
 * text blocks joined, finished for `tool_calls` when it asks for a tool.
 */
export const chatAnswer = (content: ChatResponse['content']): ChatResponse => ({
  id: 'r',
  model: 'm',
  provider: 'stub',
  content,
  text: content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join(''),
  finishReason: content.some((b) => b.type === 'tool_call') ? 'tool_calls' : 'stop',
  usage: { inputTokens: 1, outputTokens: 1 },
})
