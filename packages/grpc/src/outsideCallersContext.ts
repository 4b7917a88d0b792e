import type { NextCall } from '@grpc/grpc-js'
import { runOutsideContext } from '@hourglass/core'

type NextCallResult = ReturnType<NextCall>

/**
 * The call below ours, every operation on it run outside the caller's
 * context. grpc-js opens the channel's connection from inside a call — the
 * first one, or the first after it went idle or lost its connection: its
 * resolver, subchannel, HTTP/2 session and socket, their timers (keepalive,
 * backoff, the channel's idle timer, armed when a call ends, by a cancel or
 * grpc-js's own deadline timer too) — and an async resource keeps the
 * context it was made in for its whole life. They kept that caller's
 * context, its deadline and whatever the deadline's listeners held (a
 * request's objects), for as long as the connection lasted: one request per
 * connection, for good on a long-lived client, and the session's work ran
 * under that stale deadline. As @hourglass/fetch opens its sockets.
 * What comes back up is delivered in the caller's context by `ClientCall`.
 */
export function outsideCallersContext(make: () => NextCallResult): NextCallResult {
  const call = runOutsideContext(make)
  return {
    cancelWithStatus: (code, details) =>
      runOutsideContext(() => call.cancelWithStatus(code, details)),
    getPeer: () => call.getPeer(),
    start: (metadata, listener) => runOutsideContext(() => call.start(metadata, listener)),
    sendMessageWithContext: (context, message) =>
      runOutsideContext(() => call.sendMessageWithContext(context, message)),
    sendMessage: (message) => runOutsideContext(() => call.sendMessage(message)),
    startRead: () => runOutsideContext(() => call.startRead()),
    halfClose: () => runOutsideContext(() => call.halfClose()),
    getAuthContext: () => call.getAuthContext(),
  }
}
