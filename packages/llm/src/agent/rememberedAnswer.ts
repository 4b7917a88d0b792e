import { quoted } from '@hourglass/core'
import { isMarkedUnfinished, markUnfinished } from '../dialects/unfinishedCall.js'
import type { ChatResponse, ContentBlock } from '../types.js'
import { type BeyondJSONNumber, beyondJSONNumbers, restoreBeyondJSON } from './beyondJSONNumbers.js'
import { isChatResponse } from './notAResponse.js'

/**
 * A turn's answer as `runTurns` remembers it: the answer, the id of the
 * call it refused as cut (`cutBeforeArguments`), if any, and the numbers
 * beyond JSON's range in its calls' arguments, if any. The cut call is told
 * apart by a mark its parser sets (`markUnfinished`, a symbol), and a
 * `{"t":1e999}` call by its Infinity: a store outside the process (Redis, a
 * table: JSON) drops the mark and writes Infinity as `null`, and a rerun
 * that replayed the bare answer ran the call the first run refused —
 * `send_email` on `{}`, or on `{ to }` without its body; `set` on
 * `{ t: null }`. Kept beside the answer, never in it: the answer's blocks
 * go into the history, its keys and the requests sent to providers.
 */
export interface RememberedAnswer {
  response: ChatResponse
  cutCallId?: string
  nonFinite?: BeyondJSONNumber[]
}

/** What to remember of `response`, whose last call `cut` was refused as cut (if any). */
export function rememberAnswer(
  response: ChatResponse,
  cut: ContentBlock | undefined,
): RememberedAnswer {
  const nonFinite = beyondJSONNumbers(response.content)
  return {
    response,
    ...(cut?.type === 'tool_call' ? { cutCallId: cut.id } : {}),
    ...(nonFinite === undefined ? {} : { nonFinite }),
  }
}

/**
 * The answer a store gave back, its cut call marked again and its numbers
 * beyond JSON's range put back where JSON wrote `null`. A bare
 * `ChatResponse` is what versions before this one remembered: read as it
 * is (marked, from a store in the process; not, through JSON — as then).
 * Anything else (a custom store's `null`, `{}`, a record it rebuilt wrong)
 * is a `TypeError` saying what came and for which turn: read as an
 * answer, it failed with "Cannot read properties of null (reading
 * 'content')", naming neither the store nor the turn.
 */
export function replayAnswer(value: unknown, operationId: string, turn: number): ChatResponse {
  if (isChatResponse(value)) return value
  const response: unknown =
    typeof value === 'object' && value !== null
      ? (value as { response?: unknown }).response
      : undefined
  if (!isChatResponse(response)) {
    throw notRemembered(value, response, `turn ${turn} of operation ${quoted(operationId, 64)}`)
  }
  const { cutCallId, nonFinite } = value as RememberedAnswer
  if (Array.isArray(nonFinite)) restoreBeyondJSON(response.content, nonFinite)
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

/** The `TypeError` for a store's `value` that is no answer `rememberAnswer` gave it. */
function notRemembered(value: unknown, response: unknown, at: string): TypeError {
  const found =
    value === null
      ? 'null'
      : typeof value !== 'object'
        ? typeof value
        : response === undefined
          ? 'an object without a response'
          : response === null
            ? 'a response of null'
            : typeof response !== 'object'
              ? `a response of type ${typeof response}`
              : 'a response without a content array'
  return new TypeError(
    `runTurns: the answer the side-effect store gave back for ${at} is not one it was given ({ response, cutCallId? }, response a ChatResponse with a content array), got ${found}`,
  )
}
