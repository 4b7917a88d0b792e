import { errors as undiciErrors } from 'undici'

/**
 * How often a call waiting to retry looks whether the caller's own
 * dispatcher has been closed or destroyed. undici's dispatchers announce
 * neither (no event; only their `closed` / `destroyed` getters say it), so
 * it is looked at: a wait is rare and this costs one unref'd timer per
 * second of it, where the wait ran on for the rest of its Retry-After.
 */
export const CLOSED_DISPATCHER_POLL_MS = 1000

/**
 * undici's own error for a dispatcher of the caller's that can send no more
 * (`close()` or `destroy()` was called on it), the one a request made on it
 * now gets; undefined while it is open, or when it does not say (a
 * dispatcher of another make with neither getter).
 */
export function closedDispatcherError(dispatcher: object): Error | undefined {
  const state = dispatcher as { closed?: unknown; destroyed?: unknown }
  // `closed` first: undici's close() destroys the dispatcher once its
  // requests are done, so a closed one soon reads as destroyed too.
  if (state.closed === true) {
    return new undiciErrors.ClientClosedError(
      'your dispatcher was closed while this call waited to retry: it was not sent again',
    )
  }
  if (state.destroyed === true) {
    return new undiciErrors.ClientDestroyedError(
      'your dispatcher was destroyed while this call waited to retry: it was not sent again',
    )
  }
  return undefined
}

/**
 * Whether `dispatcher` tells of its close at all (`closed` or `destroyed`,
 * as undici's Agent, Pool, Client and ProxyAgent do, and a dispatcher
 * composed over one): a MockAgent or RetryAgent has neither, and looking at
 * it would only be a timer more.
 */
export function saysWhenClosed(dispatcher: object): boolean {
  return 'closed' in dispatcher || 'destroyed' in dispatcher
}
