import { isDeadlineExceeded } from '@hourglass/core'
import type { CallState } from './CallState.js'

/**
 * `'caller'` when an attempt ended by `thrown` was stopped by the caller
 * itself — as @hourglass/fetch's `attempt-end` says it: the consumer left its
 * `for await` (`break`, `return`), called the stream's `cancel`, or aborted
 * the call's `signal`, whatever reason it gave. Known by identity: `thrown`
 * is the reason of the call's stop signal (`state.signal`: the caller's, or a
 * stream's own, which follows it), which the attempt passes through as it is.
 *
 * Not a caller's stop: the deadline ending the attempt — its expiry, or a
 * cancelled deadline (the client left: `ClientClosedError`) — reaches the
 * attempt through the HTTP client and aborts no signal of the call's; nor
 * the deadline's own signal passed as `signal` once the deadline has ended
 * (`deadline.signal`: `ownsSignal`), nor any stop whose reason is a
 * `DeadlineExceededError` (a deadline's expiry, whichever signal carried it).
 * Undefined for anything else (a provider's failure, a cut, a timeout).
 */
export function stoppedBy(
  thrown: unknown,
  state: Pick<CallState, 'signal' | 'deadline' | 'options'>,
): 'caller' | undefined {
  const { signal, deadline } = state
  if (signal?.aborted !== true || thrown !== signal.reason) return undefined
  if (isDeadlineExceeded(thrown)) return undefined
  if (deadline !== undefined) {
    if (deadline.done && thrown === deadline.reason) return undefined
    // The deadline's own signal, given as `signal`, counts only once the
    // deadline has ended: the consumer leaving its loop or cancelling the
    // stream under a live deadline is the caller's stop (fetch says so of
    // the egress span: the chat span said `aborted`, ERROR, beside it).
    const given = state.options.signal
    if (deadline.done && given != null && ownsSignal(deadline, given)) return undefined
  }
  return 'caller'
}

function ownsSignal(deadline: NonNullable<CallState['deadline']>, signal: AbortSignal): boolean {
  return typeof deadline.ownsSignal === 'function'
    ? deadline.ownsSignal(signal)
    : signal === deadline.signal
}
