import type { Metadata } from '@grpc/grpc-js'
import {
  type Deadline,
  type DeadlineSource,
  defineChannel,
  defineChannels,
  type InvalidDeadlineHeader,
} from '@hourglass/core'

/** `hourglass:grpc:server-start`: a call got its deadline (before the handler runs, or the call is refused under `strict`). */
export interface GrpcServerStartMessage {
  /** The handler's deadline: it ends `reserveMs` before the caller's. */
  deadline: Deadline
  /** The full method path, `/package.Service/Method`. */
  method: string
  /** The call's budget as it arrived (inbound or `defaultMs`, clamped to `maxMs`; Infinity for a stream sent none), in ms. */
  budgetMs: number
  /**
   * What the handler has at start, in ms: `budgetMs − reserveMs`, less the
   * time since the call arrived (an async interceptor before ours); 0 when
   * it arrived expired.
   */
  remainingMs: number
  /**
   * Where the budget came from: `grpc-timeout`, a metadata header, `default`
   * (`defaultMs`), or `none`: a server-streaming or bidi call that came with
   * no deadline has none (`budgetMs` Infinity), and `defaultMs` played no part.
   */
  source: DeadlineSource | 'default' | 'none'
  /** True when the inbound value was cut to `maxMs`. */
  clamped: boolean
  mode: 'enforce' | 'observe'
  /**
   * True when `strict` refuses the call (malformed deadline metadata): the
   * handler never runs, and `budgetMs` is the fallback `defaultMs`, not a
   * budget its caller gave.
   */
  refused: boolean
  /**
   * The call's inbound metadata (a tracer's `traceparent` is there). Read it;
   * do not change it. Empty for a call that ended (grpc-js's own timer, the
   * client's cancel) while an async interceptor before ours still held it:
   * such a call is reported at its end, with the budget its `grpc-timeout`
   * gave (else `defaultMs`), and the handler never runs.
   */
  metadata: Metadata
}

/** `hourglass:grpc:server-invalid-header`: a trusted deadline header in the metadata was malformed. */
export interface GrpcServerInvalidHeaderMessage {
  method: string
  invalid: InvalidDeadlineHeader[]
}

/** `hourglass:grpc:server-expire`: a call ran out of time. */
export interface GrpcServerExpireMessage {
  deadline: Deadline
  method: string
  budgetMs: number
  /** Time since the call arrived, in ms. */
  elapsedMs: number
  /**
   * `arrival`: no time was left when it came in, or it ran out while an
   * interceptor before ours held the call (the handler never ran);
   * `handler`: it ran out while handling.
   */
  stage: 'arrival' | 'handler'
  /**
   * `status`: answered `DEADLINE_EXCEEDED`; `observed`: dark mode, nothing was
   * done; `late`: the handler's own answer was given after the caller's
   * budget ran out, before the deadline's timer had a turn (a busy loop), and
   * went out as written (the call ends `expired`).
   */
  action: 'status' | 'observed' | 'late'
}

/** `hourglass:grpc:server-client-cancelled`: the client cancelled the call (or its connection closed) before it was answered. */
export interface GrpcServerClientCancelledMessage {
  deadline: Deadline
  method: string
  elapsedMs: number
}

/**
 * `hourglass:grpc:server-late-write`: the handler answered after the deadline
 * did (a response message, or a status); it was swallowed. Late response
 * metadata is swallowed too, without a report of its own.
 */
export interface GrpcServerLateWriteMessage {
  method: string
  operation: 'sendMessage' | 'sendStatus'
}

/**
 * `hourglass:grpc:server-failed-after-answer`: a handler wrapped by
 * `deadlineErrors` failed (threw, or its promise rejected) after it had
 * answered. The answer stands; the error went to no caller (it is also a
 * process warning, code `HOURGLASS_GRPC_FAILED_AFTER_ANSWER`).
 */
export interface GrpcServerFailedAfterAnswerMessage {
  /** The call's deadline, when it went through `deadlineServerInterceptor()`. */
  deadline: Deadline | undefined
  /** The full method path, `/package.Service/Method` (`unknown` when the call does not say). */
  method: string
  /** What the handler threw or rejected with. */
  error: unknown
}

/** `hourglass:grpc:server-end`: the call is over; its timer and hooks are released. */
export interface GrpcServerEndMessage {
  deadline: Deadline
  method: string
  /** The gRPC status code that ended the call (`CANCELLED`, 1, when the client left). */
  code: number
  elapsedMs: number
  /**
   * `ok`: answered by the handler (whatever the status); `expired`: by the
   * deadline (or by the handler after it, before its timer ran: expire
   * action `late`); `client-cancelled`: the caller left before an answer
   * reached it (one the handler sent as the client reset the stream included);
   * `refused`: answered `INVALID_ARGUMENT` under `strict`, the handler never ran.
   */
  outcome: 'ok' | 'expired' | 'client-cancelled' | 'refused'
}

/** `hourglass:grpc:client-start`: an outbound call is about to be sent (or refused). */
export interface GrpcClientStartMessage {
  /** An opaque object, the same in this call's start and end messages (concurrent calls share deadline and method). */
  call: object
  /** The caller's deadline (explicit or current), if any. */
  deadline: Deadline | undefined
  method: string
  /**
   * The deadline given to the call, in ms from now: `min(its own, remaining − reserveMs)`;
   * `defaultMs` for a unary or client-streaming call with no deadline at all; Infinity for none.
   */
  budgetMs: number
  /** What was left on the caller's deadline, in ms (Infinity without one). */
  remainingMs: number
  /** The `x-deadline-remaining-ms` metadata written, if any. */
  headerMs: number | undefined
  /** True when the call was failed at once, without being sent. */
  refused: boolean
  /**
   * The metadata about to be sent — a copy of the caller's, so a subscriber
   * may add to it (a tracer's `traceparent`). Undefined for a refused call.
   */
  metadata: Metadata | undefined
  /**
   * The target of the channel the call is sent on, as grpc-js names it
   * (`dns:127.0.0.1:50051`, `dns:///api.example.com`, `ipv6:[::1]:50051`,
   * `unix:/run/app.sock`): what a tracer reads its `server.address` and
   * `server.port` from. Behind an HTTP CONNECT proxy (`grpc_proxy`,
   * `https_proxy`, `http_proxy`, unless `no_grpc_proxy`/`no_proxy` names the
   * target) grpc-js names the proxy's. Undefined for a call that was
   * not sent (refused, or failed as it was made), and when the call below
   * ours does not say (an interceptor's own answering `getPeer()`).
   */
  target: string | undefined
}

/** `hourglass:grpc:client-end`: an outbound call ended. */
export interface GrpcClientEndMessage {
  /** The same object as in this call's start message. */
  call: object
  deadline: Deadline | undefined
  method: string
  /** The gRPC status code the caller sees. */
  code: number
  elapsedMs: number
  /**
   * `ok`: status OK; `refused`: not sent, no budget left; `expired`: `DEADLINE_EXCEEDED`
   * (ours, grpc-js's timer, or the server's); `cancelled`: cancelled because the
   * caller's deadline was (the caller left); `error`: any other status.
   */
  outcome: 'ok' | 'refused' | 'expired' | 'cancelled' | 'error'
  /** The channel's target, as in this call's start message. */
  target: string | undefined
}

/**
 * The diagnostics channels @hourglass/grpc publishes on. Messages are built
 * only while somebody subscribes. Core's `deadline:*` and `slice:*` channels
 * (`coreChannels`) fire as well.
 */
export const grpcChannels = defineChannels('grpc', {
  /** A call got its deadline (before the handler runs). */
  serverStart: defineChannel<GrpcServerStartMessage>('hourglass:grpc:server-start'),
  /** A trusted deadline header in the inbound metadata was malformed. */
  serverInvalidHeader: defineChannel<GrpcServerInvalidHeaderMessage>(
    'hourglass:grpc:server-invalid-header',
  ),
  /** A call ran out of time (answered `DEADLINE_EXCEEDED`, or observed in dark mode). */
  serverExpire: defineChannel<GrpcServerExpireMessage>('hourglass:grpc:server-expire'),
  /** The client cancelled the call, or its connection closed, before it was answered. */
  serverClientCancelled: defineChannel<GrpcServerClientCancelledMessage>(
    'hourglass:grpc:server-client-cancelled',
  ),
  /** The handler answered after the deadline did; it was swallowed. */
  serverLateWrite: defineChannel<GrpcServerLateWriteMessage>('hourglass:grpc:server-late-write'),
  /** A handler failed after it had answered; the answer stands. */
  serverFailedAfterAnswer: defineChannel<GrpcServerFailedAfterAnswerMessage>(
    'hourglass:grpc:server-failed-after-answer',
  ),
  /** The call is over; its timer and hooks are released. */
  serverEnd: defineChannel<GrpcServerEndMessage>('hourglass:grpc:server-end'),
  /** An outbound call is about to be sent (or refused). */
  clientStart: defineChannel<GrpcClientStartMessage>('hourglass:grpc:client-start'),
  /** An outbound call ended. */
  clientEnd: defineChannel<GrpcClientEndMessage>('hourglass:grpc:client-end'),
})

declare module '@hourglass/core' {
  interface ChannelGroups {
    grpc: typeof grpcChannels
  }
}
