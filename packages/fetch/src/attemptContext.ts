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
    // No connection for it yet, and none of its own being made: queued
    // behind another request's connect (an undici Client) or in a pool's
    // queue. A keep-alive reuse is already writing ('headers'), a connect
    // of its own is in 'dns' / 'connect': neither lands here.
    if (attempt.state === 'queued' && !attempt.connectClaimed) waitForConnection(attempt)
  }
}

/**
 * Attempts dispatched without a connection of their own (see above), until
 * they end. A connect whose own attempt is stopped by its deadline or its
 * caller keeps going for them (`othersWaitFor`): undici fails every request
 * queued on a connect that fails, and they failed with that other
 * request's reason.
 */
const waiting = new Set<Attempt>()

function waitForConnection(attempt: Attempt): void {
  if (attempt.done || waiting.has(attempt)) return
  waiting.add(attempt)
  attempt.onFinish(forget)
}

function forget(attempt: Attempt): void {
  waiting.delete(attempt)
}

/**
 * Another attempt to `protocol//host` (undici's origin: a default port
 * left out) still waits for a connection, that a connect now in progress
 * there may be the one to bring. Read only when a connect's own attempt
 * is stopped.
 */
export function othersWaitFor(protocol: string, host: string, except: Attempt): boolean {
  for (const attempt of waiting) {
    if (attempt === except || attempt.state !== 'queued' || attempt.connectClaimed) continue
    try {
      const url = new URL(attempt.init.url)
      if (url.protocol === protocol && url.host === host) return true
    } catch {
      // A URL that does not parse names no origin: not this one.
    }
  }
  return false
}

/** The attempt a connector may bound by its deadline, claimed once. */
export function claimConnectAttempt(): Attempt | undefined {
  const attempt = dispatching ?? readContext(ATTEMPT)
  if (!attempt || attempt.done || attempt.connectClaimed || attempt.state !== 'queued') return
  attempt.connectClaimed = true
  return attempt
}
