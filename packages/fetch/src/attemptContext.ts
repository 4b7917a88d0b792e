import { contextKey, readContext, runWithContext } from '@hourglass/core'
import type { Attempt } from './Attempt.js'

// How the connector finds the attempt it opens a connection for. undici opens
// a connection inside `dispatch`, synchronously, except for a request whose
// body is a stream or iterable of unknown length: its client waits a
// microtask first (in case the stream ends in the same tick). So:
// - the attempt being dispatched sits in a module slot for the synchronous
//   part of `dispatch` (set and restored around it, nesting-safe);
// - only an attempt whose body may defer the connect also rides in core's one
//   context, which the connect a microtask later runs in.
// Entering the context on every dispatch cost more than everything else the
// interceptor does per call (Node 20). A connector running anywhere else (a
// stale context, a connection opened for a queued request) finds no
// claimable attempt and uses its own limits without a deadline.
const ATTEMPT = contextKey<Attempt>('@hourglass/fetch.attempt')

let dispatching: Attempt | undefined

/**
 * Run `fn` (undici's dispatch) with `attempt` as the one a connector may
 * claim; `deferred` when the body may make undici connect a microtask later.
 */
export function runWithAttempt<T>(attempt: Attempt, deferred: boolean, fn: () => T): T {
  const previous = dispatching
  dispatching = attempt
  try {
    return deferred ? runWithContext(ATTEMPT, attempt, fn) : fn()
  } finally {
    dispatching = previous
  }
}

/** The attempt a connector may bound by its deadline, claimed once. */
export function claimConnectAttempt(): Attempt | undefined {
  const attempt = dispatching ?? readContext(ATTEMPT)
  if (!attempt || attempt.done || attempt.connectClaimed || attempt.state !== 'queued') return
  attempt.connectClaimed = true
  return attempt
}
