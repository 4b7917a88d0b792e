import type { Interceptor } from '@grpc/grpc-js'
import { currentDeadline } from '@hourglass/core'
import { ClientCall } from './ClientCall.js'
import { type ClientDeadlineOptions, resolveClientOptions } from './clientOptions.js'
import { explicitDeadline, markDeadlineInterceptor } from './withCallDeadline.js'

/**
 * A grpc-js client interceptor (`new Client(address, credentials, { interceptors: [...] })`)
 * that carries the caller's deadline — `withCallDeadline(deadline)` in the call
 * options, else `currentDeadline()` — into every outbound call:
 *
 * - the call's gRPC deadline becomes `min(its own, remaining − reserveMs)`,
 *   so grpc-js sends it as `grpc-timeout` when the stream opens;
 * - `x-deadline-remaining-ms` metadata carries the same budget to servers
 *   that read Hourglass headers;
 * - with less than `minBudgetMs` left the call fails at once with
 *   `DEADLINE_EXCEEDED`, and nothing is sent;
 * - when the caller's deadline ends (it expires, or is cancelled because the
 *   caller left) the call is cancelled: `DEADLINE_EXCEEDED` or `CANCELLED`;
 * - a unary or client-streaming call with no deadline at all (none here, none
 *   of its own) gets `defaultMs` (30 s) as its gRPC deadline instead of
 *   waiting forever for a server that never answers.
 *
 * grpc-js runs interceptors synchronously inside the method call, so the
 * current deadline is the caller's.
 */
export function deadlineInterceptor(options: ClientDeadlineOptions = {}): Interceptor {
  const resolved = resolveClientOptions(options)
  // Marked, so withCallDeadline can tell whether a call's own interceptors
  // (which replace the client's) still include one.
  return markDeadlineInterceptor<Interceptor>((callOptions, nextCall) => {
    const deadline = explicitDeadline(callOptions) ?? currentDeadline()
    return new ClientCall(resolved, callOptions.method_definition.path, deadline).intercept(
      callOptions,
      nextCall,
    )
  })
}
