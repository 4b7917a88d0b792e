import { isMarkedUnfinished, markUnfinished } from '../dialects/unfinishedCall.js'
import type { ChatResponse, ContentBlock } from '../types.js'
import { isChatResponse } from './notAResponse.js'

/**
 * A turn's answer as `runTurns` remembers it: the answer, and the id of the
 * call it refused as cut (`cutBeforeArguments`), if any. That call is told
 * apart by a mark its parser sets (`markUnfinished`, a symbol): a store
 * outside the process (Redis, a table: JSON) drops it, and a rerun that
 * replayed the bare answer ran the call the first run refused —
 * `send_email` on `{}`, or on `{ to }` without its body. Kept beside the
 * answer, never in it: the answer's blocks go into the history, its keys
 * and the requests sent to providers.
 */
export interface RememberedAnswer {
  response: ChatResponse
  cutCallId?: string
}

/** What to remember of `response`, whose last call `cut` was refused as cut (if any). */
export function rememberAnswer(
  response: ChatResponse,
  cut: ContentBlock | undefined,
): RememberedAnswer {
  return cut?.type === 'tool_call' ? { response, cutCallId: cut.id } : { response }
}

/**
 * The answer a store gave back, its cut call marked again. A bare
 * `ChatResponse` is what versions before this one remembered: read as it
 * is (marked, from a store in the process; not, through JSON — as then).
 */
export function replayAnswer(value: RememberedAnswer | ChatResponse): ChatResponse {
  if (isChatResponse(value)) return value
  const { response, cutCallId } = value
  const last = response.content.at(-1)
  if (
    cutCallId !== undefined &&
    last?.type === 'tool_call' &&
    last.id === cutCallId &&
    !isMarkedUnfinished(last)
  ) {
    markUnfinished(last)
  }
  return response
}
