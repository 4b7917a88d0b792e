import { contextKey, readContext, runWithContext } from '@hourglass/core'
import type { Attempt } from './Attempt.js'

// The attempt being dispatched rides in core's one context (no AsyncLocalStorage
// of our own). undici opens a connection inside `dispatch` — synchronously, or
// a microtask later for a request with a streamed body — so the connector runs
// inside the dispatching attempt's context. A connector running anywhere else
// (a stale context, a connection opened for a queued request) finds no
// claimable attempt and uses its own limits without a deadline.
const ATTEMPT = contextKey<Attempt>('@hourglass/fetch.attempt')

/** Run `fn` (undici's dispatch) with `attempt` as the one a connector may claim. */
export function runWithAttempt<T>(attempt: Attempt, fn: () => T): T {
  return runWithContext(ATTEMPT, attempt, fn)
}

/** The attempt a connector may bound by its deadline, claimed once. */
export function claimConnectAttempt(): Attempt | undefined {
  const attempt = readContext(ATTEMPT)
  if (!attempt || attempt.done || attempt.connectClaimed || attempt.state !== 'queued') return
  attempt.connectClaimed = true
  return attempt
}
