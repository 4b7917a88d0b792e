import type { ChatResponse } from '../types.js'

/** What a `call` of `runTurns` or `withRepair` resolved to reads as a `ChatResponse`: an object with its `content` blocks. */
export function isChatResponse(value: unknown): value is ChatResponse {
  return (
    typeof value === 'object' &&
    value !== null &&
    Array.isArray((value as { content?: unknown }).content)
  )
}

/**
 * The `TypeError` for a `call` that resolved to something else, saying what
 * it must return: `where` is the caller (`runTurns`), `at` which call it was
 * (`turn 2`). `callModel` with `stream: true` returns a ModelStream (an async
 * iterable with a `result` promise), not a promise of the answer — also
 * when `stream` is a boolean variable, which its overloads type as a promise.
 */
export function notAResponse(where: string, value: unknown, at: string): TypeError {
  const expected = `${where}: call must resolve to a ChatResponse (an object with a content array), got`
  if (isStream(value)) {
    return new TypeError(
      `${expected} a stream on ${at} (callModel with stream: true returns a ModelStream): return its .result, or call without stream: true`,
    )
  }
  const given =
    value === null
      ? 'null'
      : typeof value === 'object'
        ? 'an object without a content array'
        : typeof value
  return new TypeError(`${expected} ${given} on ${at}`)
}

/**
 * Cancels a stream that `call` returned in place of an answer, with `reason`
 * (the `TypeError` above): nobody will read it, and it would go on
 * generating — and billing — after the caller's run had failed. Anything
 * else is left alone; a `cancel` that throws changes nothing.
 */
export function cancelUnread(value: unknown, reason: unknown): void {
  if (!isStream(value)) return
  try {
    const cancel = (value as { cancel?: unknown }).cancel
    if (typeof cancel === 'function') cancel.call(value, reason)
  } catch {
    // Not ours to fail on: the TypeError says what went wrong.
  }
}

function isStream(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false
  try {
    return (
      typeof (value as { result?: { then?: unknown } }).result?.then === 'function' ||
      Symbol.asyncIterator in value
    )
  } catch {
    return false // a getter that throws says no
  }
}
