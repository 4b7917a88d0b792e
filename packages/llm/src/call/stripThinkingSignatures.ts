import type { ChatMessage, ContentBlock } from '../types.js'

/**
 * The history, ready for a different model: every thinking block loses its
 * `signature` (signatures are issued by one provider/model and rejected by
 * others), and the OpenAI-compatible `field` it was said under (the name
 * that server reads back, not the fallback's: DeepSeek's thinking-with-tools
 * mode asks for `reasoning_content`), and keeps its text. Thinking blocks left with no text — redacted
 * reasoning that was only a signature — are dropped, as nothing remains to
 * send. Returns new arrays and new objects where anything changed; the input
 * is never mutated.
 */
export function stripThinkingSignatures(messages: readonly ChatMessage[]): ChatMessage[] {
  return messages.map((message) => {
    if (typeof message.content === 'string') return message
    if (!message.content.some((block) => block.type === 'thinking')) return message
    const content: ContentBlock[] = []
    for (const block of message.content) {
      if (block.type !== 'thinking') {
        content.push(block)
      } else if (block.thinking !== '') {
        content.push({ type: 'thinking', thinking: block.thinking })
      }
    }
    return { ...message, content }
  })
}
