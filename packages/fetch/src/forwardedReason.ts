import { errors } from 'undici'

/**
 * What an inner handler is told a request failed with: the reason as it is,
 * as undici passes a caller's abort reason on (`abort('shutdown')` rejects
 * with 'shutdown') — but a falsy one (`abort(0)`, `AbortSignal.abort(null)`)
 * becomes undici's `RequestAbortedError`, as undici's own abort makes it:
 * given as it is, `request()`'s `err ? reject : resolve` resolved the call
 * with `{ opaque }`, and undici's retry interceptor outside ours threw
 * destructuring it.
 */
export function forwardedReason(reason: unknown): Error {
  return (reason || new errors.RequestAbortedError()) as Error
}
