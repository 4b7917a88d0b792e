import { ServerInterceptingCall, type ServerInterceptor } from '@grpc/grpc-js'
import { ServerCall } from './ServerCall.js'
import { resolveServerOptions, type ServerDeadlineOptions } from './serverOptions.js'

/**
 * A grpc-js server interceptor (`new Server({ interceptors: [...] })`): every
 * call gets one absolute deadline and is answered `DEADLINE_EXCEEDED` when it
 * runs out. The budget is the smallest valid trusted inbound value — the
 * call's `grpc-timeout`, `x-deadline-remaining-ms` or
 * `x-envoy-expected-rq-timeout-ms` metadata — or `defaultMs`, clamped to
 * `maxMs`. The handler runs inside it (`currentDeadline()`, `deadlineOf(call)`);
 * its signal aborts at the answer and when the client cancels; the timer is
 * released when the call is over.
 */
export function deadlineServerInterceptor(options: ServerDeadlineOptions = {}): ServerInterceptor {
  const resolved = resolveServerOptions(options)
  return (method, call) => {
    const state = new ServerCall(method, call, resolved)
    return new ServerInterceptingCall(call, {
      ...state.responder,
      start: (next) => next(state.listener),
    })
  }
}
