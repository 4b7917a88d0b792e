import type { ChatResponse, ContentBlock } from '../types.js'

/**
 * Whole answers whose body had no content and no finish reason
 * (`markNoAnswer`). Kept off the response itself: it is what the dialect's
 * parser returns to anyone who calls it, and only the adapter refuses it.
 */
const noAnswers = new WeakSet<ChatResponse>()

/**
 * Marks `response` as no answer when its body said no finish reason
 * (`finished` false) and carried no content — no text, thinking or tool call
 * (an empty text block is none) — as a stream that ends so is no answer
 * (`StreamCollector.empty`). No API sends a whole answer so: OpenAI's
 * `finish_reason` is required, Anthropic's `stop_reason` is "always non-null"
 * in non-streaming mode, and a Gemini candidate without `finishReason` "has
 * not stopped generating". A finish reason without content is an answer (an
 * empty one the provider finished); content without one is an answer too
 * (`unknown`). Returns `response`. @internal
 */
export function markNoAnswer(response: ChatResponse, finished: boolean): ChatResponse {
  // The finish reason first: the content is looked at only for a body without one.
  if (!finished && !response.content.some(says)) noAnswers.add(response)
  return response
}

/** Marked by `markNoAnswer`: a whole answer with no content and no finish reason. @internal */
export function isNoAnswer(response: ChatResponse): boolean {
  return noAnswers.has(response)
}

function says(block: ContentBlock): boolean {
  switch (block.type) {
    case 'text':
      return block.text !== ''
    case 'thinking':
      return block.thinking !== ''
    case 'tool_call':
      return true
    default:
      return false
  }
}
