import { type ClientClosedError, isClientClosed } from './ClientClosedError.js'
import { type DeadlineExceededError, isDeadlineExceeded } from './DeadlineExceededError.js'

/** Deep enough for any wrapping seen in practice; bounds a cyclic or hostile chain. */
const MAX_DEPTH = 8

/**
 * The deadline error that ended this work: `error` itself when it is a
 * `DeadlineExceededError` or `ClientClosedError`, else the nearest one in its
 * `cause` chain, else undefined.
 *
 * Work stopped by a deadline often fails with a wrapper: Node's own APIs
 * given the signal (`timers/promises`, `events.once`, `stream.pipeline`)
 * reject with an `AbortError` whose cause is the signal's reason, and
 * `@hourglass/llm` keeps it as the cause of a `StreamInterruptedError` (the
 * wrapper carries the partial answer). Error handlers that map deadline
 * errors to 504 / `DEADLINE_EXCEEDED` or to silence judge such an error by
 * what ended it; judged by the wrapper alone, a streamed model call cut by
 * its deadline reached the user's handlers as an unknown error (a stack
 * printed for a client that had left, a 500 or `UNKNOWN` instead of a 504).
 */
export function endedBy(error: unknown): DeadlineExceededError | ClientClosedError | undefined {
  let current = error
  for (let depth = 0; depth <= MAX_DEPTH; depth++) {
    if (isDeadlineExceeded(current) || isClientClosed(current)) return current
    if (typeof current !== 'object' || current === null) return undefined
    let next: unknown
    try {
      next = (current as { cause?: unknown }).cause
    } catch {
      return undefined // a hostile getter: nothing to learn from it
    }
    if (next === current) return undefined
    current = next
  }
  return undefined
}
