import type { Dispatcher } from 'undici'
import type { Attempt } from './Attempt.js'
import { runWithAttempt } from './attemptContext.js'
import { withDeadlineHeader } from './dispatchHeaders.js'

/**
 * Dispatch one attempt: the deadline header is computed here, just before the
 * request leaves, and the connector (if it is ours) finds the attempt in
 * core's context. undici's own header/body timers are switched off: the
 * attempt's phase timers replace them (one clock, deadline-aware).
 */
export function sendAttempt(
  dispatch: Dispatcher.Dispatch,
  opts: Dispatcher.DispatchOptions,
  handler: Dispatcher.DispatchHandler,
  attempt: Attempt,
): boolean {
  const { headers, headerMs } = withDeadlineHeader(opts.headers, attempt.init.deadline)
  attempt.dispatched(headerMs)
  return runWithAttempt(attempt, () =>
    dispatch({ ...opts, headers, headersTimeout: 0, bodyTimeout: 0 }, handler),
  )
}
