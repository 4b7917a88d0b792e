import type { ChatMessage, ContentBlock, ThinkingBlock } from '../types.js'

/**
 * The history, ready for a different model: every thinking block loses its
 * `signature` (signatures are issued by one provider/model and rejected by
 * others) and keeps its text, and the OpenAI-compatible `field` it was said
 * under: which name a fallback replays it as is the fallback adapter's to
 * choose (`openAICompatible`'s `replayThinking`), and another vLLM reads it
 * only as `reasoning`. Thinking blocks left with no text — redacted
 * reasoning that was only a signature — are dropped, as nothing remains to
 * send. `keep` names the blocks that go as they are, signature and all (those
 * the receiving model signed). Returns new arrays and new objects where
 * anything changed; the input is never mutated.
 */
export function stripThinkingSignatures(
  messages: readonly ChatMessage[],
  keep: (block: ThinkingBlock) => boolean = () => false,
): ChatMessage[] {
  return messages.map((message) => {
    if (typeof message.content === 'string') return message
    if (!message.content.some((block) => block.type === 'thinking' && !keep(block))) return message
    const content: ContentBlock[] = []
    for (const block of message.content) {
      if (block.type !== 'thinking' || keep(block)) {
        content.push(block)
      } else if (block.thinking !== '') {
        content.push(
          block.field === undefined
            ? { type: 'thinking', thinking: block.thinking }
            : { type: 'thinking', thinking: block.thinking, field: block.field },
        )
      }
    }
    return { ...message, content }
  })
}
