import { AsyncLocalStorage } from 'node:async_hooks'
import type { Attempt } from './Attempt.js'

/**
 * Hands the attempt from the interceptor to the connector. undici opens a new
 * connection synchronously inside `dispatch` when no idle one exists, so the
 * connector runs inside the dispatching attempt's context; a connector running
 * anywhere else (a stale context, a connection opened for a queued request)
 * finds no claimable attempt and uses its own limits without a deadline.
 */
export const attemptStorage = new AsyncLocalStorage<Attempt>()

/** The attempt a connector may bound by its deadline, claimed once. */
export function claimConnectAttempt(): Attempt | undefined {
  const attempt = attemptStorage.getStore()
  if (!attempt || attempt.done || attempt.connectClaimed || attempt.state !== 'queued') return
  attempt.connectClaimed = true
  return attempt
}
