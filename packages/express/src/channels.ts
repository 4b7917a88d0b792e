import {
  type Deadline,
  type DeadlineSource,
  defineChannel,
  defineChannels,
  type InvalidDeadlineHeader,
} from '@hourglass/core'

/**
 * `hourglass:ingress:start`: a request got its deadline (before the chain
 * runs, or `strict` refuses it). `req` is the framework's request object.
 */
export interface IngressStartMessage {
  deadline: Deadline
  req: unknown
  budgetMs: number
  /** The header the budget came from, or `default`. */
  source: DeadlineSource | 'default'
  /** True when the inbound value was cut to `maxMs`. */
  clamped: boolean
  mode: 'enforce' | 'observe'
  /**
   * True when `strict` refuses the request (a malformed deadline header):
   * the chain never runs. `budgetMs` and `source` are what it would have
   * run with: a valid trusted header beside the malformed one (its value,
   * clamped), else the fallback `defaultMs` (`source` `default`).
   */
  refused: boolean
}

/** `hourglass:ingress:invalid-header`: published just before the request's start. */
export interface IngressInvalidHeaderMessage {
  req: unknown
  invalid: InvalidDeadlineHeader[]
}

/** `hourglass:ingress:expire`. */
export interface IngressExpireMessage {
  deadline: Deadline
  req: unknown
  budgetMs: number
  elapsedMs: number
  /** The slice running when time ran out, if known. */
  slice?: string | undefined
  /** `arrival`: the budget was 0 when the request came in; `handler`: it ran out while handling. */
  stage: 'arrival' | 'handler'
  /**
   * `504` answered; `ended` a started (streaming) response was ended;
   * `observed` dark mode did nothing; `app` the app answered it itself and
   * said so (`reportExpired`): its own 504, a stream's error event or cut;
   * `late` the handler's own answer ended after the caller's deadline,
   * before the deadline's timer had a turn (a busy loop), and went out as
   * written.
   */
  action: '504' | 'ended' | 'observed' | 'app' | 'late'
}

/** `hourglass:ingress:client-closed`. */
export interface IngressClientClosedMessage {
  deadline: Deadline
  req: unknown
  elapsedMs: number
}

/** `hourglass:ingress:late-write`. */
export interface IngressLateWriteMessage {
  req: unknown
  /**
   * The response method the handler called too late (`write`, `end`,
   * `setHeader`, …), `statusCode` or `statusMessage` for one it assigned,
   * or `pipe` for a stream piped into the response.
   */
  method: string
}

/** `hourglass:ingress:end`: the request's resources are released. */
export interface IngressEndMessage {
  deadline: Deadline
  req: unknown
  /**
   * The response's status; for one Node answered itself on the raw socket
   * and cut (outcome `error`: its `requestTimeout`'s 408, a malformed
   * body's 400), the status Node sent: the response never started.
   */
  statusCode: number
  elapsedMs: number
  /**
   * `ok` finished in time; `expired` answered/ended by the deadline;
   * `client-closed` the caller left before the response ended (its FIN or
   * reset on the connection; before a 400 under `strict` could reach it
   * included); `error` the server destroyed the response before it ended:
   * with an error (a `pipeline(source, res)` whose source failed mid-body)
   * or without one (`res.destroy()`, `server.closeAllConnections()`, a
   * server timeout), the client still there; `refused`
   * answered 400 under `strict` (a malformed deadline header), the chain
   * never ran.
   */
  outcome: 'ok' | 'expired' | 'client-closed' | 'error' | 'refused'
  /**
   * For outcome `error`: the error the response was destroyed with
   * (`res.errored`); for a cut without one, the socket's error
   * (`ERR_HTTP_REQUEST_TIMEOUT`) or else Node's `ERR_STREAM_PREMATURE_CLOSE`.
   */
  error?: unknown
}

/**
 * The diagnostics channels @hourglass/express publishes on. Messages are
 * built only while somebody subscribes. Core's `deadline:*` and `slice:*`
 * channels (`coreChannels`) fire as well.
 */
export const expressChannels = defineChannels('express', {
  /** A request got its deadline (before the chain runs, or `strict` refuses it). */
  start: defineChannel<IngressStartMessage>('hourglass:ingress:start'),
  /** An inbound deadline header was malformed. */
  invalidHeader: defineChannel<IngressInvalidHeaderMessage>('hourglass:ingress:invalid-header'),
  /** A request ran out of time (answered 504, or observed in dark mode). */
  expire: defineChannel<IngressExpireMessage>('hourglass:ingress:expire'),
  /** The client went away before the response finished. */
  clientClosed: defineChannel<IngressClientClosedMessage>('hourglass:ingress:client-closed'),
  /** A handler wrote after the deadline answered for it. */
  lateWrite: defineChannel<IngressLateWriteMessage>('hourglass:ingress:late-write'),
  /** The response finished (or was abandoned); the request's resources are released. */
  end: defineChannel<IngressEndMessage>('hourglass:ingress:end'),
})

declare module '@hourglass/core' {
  interface ChannelGroups {
    express: typeof expressChannels
  }
}
