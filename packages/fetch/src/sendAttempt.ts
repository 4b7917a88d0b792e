import type { Dispatcher } from 'undici'
import type { Attempt } from './Attempt.js'
import { runWithAttempt } from './attemptContext.js'
import { keepDeadlineHeaderCurrent, settleDeadlineHeader } from './currentDeadlineHeader.js'
import { isBodyInMemory, withDeadlineHeader } from './dispatchHeaders.js'

/**
 * Set on the dispatch options of every attempt an interceptor sends: a
 * deadline interceptor beneath it (a dispatcher already composed with
 * `deadlineInterceptor` given to `createFetch`, or composed twice) lets
 * such a request pass as it is. Without it each layer made the request its
 * own: two attempts per request with their own phase timers (and, with
 * createFetch's, a redirect hop that was none), and where neither saw the
 * other's call (two installed copies of this package, or the interceptor
 * composed twice) two retry loops, one inside the other. `Symbol.for`: the
 * copies must agree on it.
 */
export const SENT_BY_HOURGLASS: unique symbol = Symbol.for('@hourglass/fetch.sent')

/**
 * Dispatch one attempt: the deadline header is computed here, just before the
 * request leaves, and the connector (if it is ours) finds the attempt it
 * connects for (`runWithAttempt`). A caller's own per-request undici
 * `headersTimeout` / `bodyTimeout` is one of the attempt's phase limits, so
 * undici's timer for it is switched off (one clock, deadline-aware). With
 * none, the dispatcher's own values are left in force: undici takes a
 * per-request value over its Agent's, so the `0` we sent made a user's
 * `new Agent({ headersTimeout: 2000 })` wait out our 10 s instead. Ours only
 * narrow what the Agent allows. createFetch's own Agent has both at 0.
 */
export function sendAttempt(
  dispatch: Dispatcher.Dispatch,
  opts: Dispatcher.DispatchOptions,
  handler: Dispatcher.DispatchHandler,
  attempt: Attempt,
): boolean {
  const deadline = attempt.sentUnder
  const { headers, headerMs } = withDeadlineHeader(opts.headers, deadline)
  attempt.dispatched(headerMs)
  attempt.uploads = carriesBody(opts.body)
  const sent = attemptOptions(opts, headers)
  let accepted: boolean
  try {
    accepted = runWithAttempt(attempt, !isBodyInMemory(opts.body), () => dispatch(sent, handler))
  } catch (error) {
    // Thrown after the attempt ended (a handler's own callback throwing
    // through a dispatcher that answered at once): not a refusal of ours to tell.
    if (attempt.done) throw error
    refusedUnsent(handler, attempt, error)
    return false
  }
  // Read during the dispatch (undici builds its request there) as written,
  // the value the attempt's event names; read later — a layer beneath that
  // sends these options again after a back-off, or builds its request only
  // after a lookup — as what is left then; once the attempt is over, as
  // what went out last (`0` if the deadline ended it).
  if (headerMs !== undefined && deadline !== undefined) {
    keepDeadlineHeaderCurrent(headers, deadline)
    attempt.onFinish((ended) => settleDeadlineHeader(headers, deadline, ended.error))
  }
  return accepted
}

/**
 * The dispatcher beneath threw as the request was handed to it (a caller's
 * own interceptor composed beneath the deadline layer, a dispatcher of the
 * caller's refusing it): the attempt ends with that error, told through the
 * handler as undici's own dispatchers tell a throw (`handler.onError`).
 * Thrown on, a retry's throw escaped undici's callbacks — an uncaught
 * exception, the call never settled — and through createFetch an undici
 * code it carried (`UND_ERR_SOCKET`) was read as the upstream's closed
 * connection and retried. Nothing was sent: never retried (`dispatchThrew`).
 */
function refusedUnsent(
  handler: Dispatcher.DispatchHandler,
  attempt: Attempt,
  error: unknown,
): void {
  attempt.dispatchThrew = true
  // Ended first, with the error as it was thrown: the handler's failure path
  // reads a queued attempt's codes as a DNS or connect failure of its own.
  attempt.finish(error)
  const legacy = handler as { onError?: (error: unknown) => void }
  if (typeof legacy.onError === 'function') legacy.onError(error)
  else handler.onResponseError?.(undefined as never, error as Error)
}

/**
 * The caller's dispatch options (own enumerable fields, symbol keys too, as a
 * spread copies them) with ours over them. `Object.assign` onto a fresh
 * object rather than `{ ...opts, … }`: on Node 20 that spread of undici's
 * options went through V8's generic clone path, ~0.45 µs against ~0.09 µs
 * (and ~2 µs per attempt in the interceptor's profile, its largest item).
 */
function attemptOptions(
  opts: Dispatcher.DispatchOptions,
  headers: NonNullable<Dispatcher.DispatchOptions['headers']>,
): Dispatcher.DispatchOptions {
  const out = Object.assign({}, opts) as Dispatcher.DispatchOptions & {
    [SENT_BY_HOURGLASS]?: true
  }
  out.headers = headers
  out[SENT_BY_HOURGLASS] = true
  // A caller's own value is already this attempt's phase limit (the
  // interceptor's `callerLimits`) and replaces the Agent's, as in undici:
  // its timer goes. None given: none set, so the Agent's value applies.
  // One undici refuses is left for undici to refuse, as without us.
  if (undiciTakes(opts.headersTimeout)) out.headersTimeout = 0
  if (undiciTakes(opts.bodyTimeout)) out.bodyTimeout = 0
  return out
}

/** undici's own check of `headersTimeout` / `bodyTimeout` (core/request.js): a finite number ≥ 0. */
function undiciTakes(value: unknown): boolean {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
}

/** A body with bytes to send (an empty string or buffer is written whole with the headers). */
function carriesBody(body: unknown): boolean {
  if (body == null) return false
  if (typeof body === 'string' || body instanceof Uint8Array) return body.length > 0
  return true
}
