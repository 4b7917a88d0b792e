import { isMarkedUnfinished } from '../dialects/unfinishedCall.js'
import type { ChatResponse } from '../types.js'

/**
 * A `length` answer a "continue" step goes on from, without the tool call
 * it was cut in: its last block, when that is a call whose end did not come
 * — marked so by its parser (`markUnfinished`: no argument text, Anthropic's
 * last `tool_use` of a `max_tokens` answer) or arguments that did not parse.
 * The continuation is asked with the cut answer's text alone, so no part of
 * it can finish the call; kept in the joined answer, the call took the
 * continuation's `stop` and read as finished — `runTurns` ran `send_email`
 * on `{}`, or on Anthropic's `{ to }` without its body. The model, its tools
 * still offered, can call it whole in the continuation. A call written whole
 * (`{}` streamed as text, Gemini's whole parts) is kept.
 */
export function withoutCutCall(response: ChatResponse): ChatResponse {
  const last = response.content.at(-1)
  if (
    response.finishReason !== 'length' ||
    last?.type !== 'tool_call' ||
    !(isMarkedUnfinished(last) || typeof last.arguments === 'string')
  ) {
    return response
  }
  return { ...response, content: response.content.slice(0, -1) }
}
