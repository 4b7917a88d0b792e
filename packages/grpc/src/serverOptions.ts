import {
  type Clock,
  type DeadlineSource,
  INGRESS_MEANT_INSTEAD,
  type ResolvedIngressOptions,
  refuseUnknownOptions,
  resolveIngressOptions,
} from '@hourglass/core'

/** Options of `deadlineServerInterceptor()`: the same names, units and defaults as @hourglass/express's `deadline()`. */
export interface ServerDeadlineOptions {
  /** Budget for a call that carries no valid deadline (no `grpc-timeout`, no trusted metadata), in ms. Default 2000. Must be > 0. */
  defaultMs?: number | undefined
  /**
   * The most any call with a deadline may have, in ms: an inbound value above
   * it is cut to it (a caller can shorten its call, never lengthen it). A
   * server-streaming or bidi call that sent none has none (see `defaultMs`).
   * Default 30000. Must be > 0.
   */
  maxMs?: number | undefined
  /**
   * Kept back for sending `DEADLINE_EXCEEDED`, in ms; 0 = none. The handler's
   * deadline ends this much before the caller's, so what it propagates
   * downstream already leaves the time to answer. Default: adaptive, as in
   * @hourglass/express (core's `adaptiveReserveMs()`, read per call) — the
   * larger of twice the timer lateness this process sees and the p99 of how
   * late its last timeout answers were flushed plus that lateness, + 2 ms,
   * bounded to 10–100 ms.
   */
  reserveMs?: number | undefined
  /**
   * Which inbound deadlines to believe. Default: all three — `grpc-timeout`
   * (the call's gRPC deadline) and the `x-deadline-remaining-ms` and
   * `x-envoy-expected-rq-timeout-ms` metadata. `[]` ignores every inbound
   * deadline (an edge that sets its own budget).
   */
  trust?: readonly DeadlineSource[] | undefined
  /**
   * Answer `INVALID_ARGUMENT` (handler not called) when trusted deadline
   * metadata is malformed. Default false: use the other sources or `defaultMs`,
   * and report it. (A malformed `grpc-timeout` is answered `INTERNAL` by
   * grpc-js itself.)
   */
  strict?: boolean | undefined
  /**
   * `enforce` (default): answer `DEADLINE_EXCEEDED` and abort at the deadline.
   * `observe` (dark mode): compute and propagate everything, report each call
   * that would have been cut, but never answer or abort for it.
   */
  mode?: 'enforce' | 'observe' | undefined
  /** Time source; inject a `ManualClock` in tests. Default: the system clock. */
  clock?: Clock | undefined
}

export type ResolvedServerOptions = ResolvedIngressOptions

const OPTION_NAMES = Object.keys({
  defaultMs: true,
  maxMs: true,
  reserveMs: true,
  trust: true,
  strict: true,
  mode: true,
  clock: true,
} satisfies Record<keyof ServerDeadlineOptions, true>)

/** How core's option errors name this ingress and its refusal: gRPC's words, not HTTP's 504. */
const SERVER_LABEL: NonNullable<Parameters<typeof resolveIngressOptions>[1]> = {
  name: 'deadlineServerInterceptor',
  refusal: 'DEADLINE_EXCEEDED',
  every: 'every call',
  everyWithoutDeadline: 'every unary or client-streaming call without a deadline',
}

/**
 * Validate once, when the interceptor is created: a typo should fail at
 * boot, not per call. An unknown key too, as `deadline()` and `createFetch()`
 * refuse one: ignored, `{ maxMS: 5000 }` left every call its 30 s.
 */
export function resolveServerOptions(options: ServerDeadlineOptions): ResolvedServerOptions {
  refuseUnknownOptions(options, OPTION_NAMES, 'deadlineServerInterceptor()', {
    meant: INGRESS_MEANT_INSTEAD,
  })
  // Core refuses a fixed reserveMs not under maxMs and defaultMs, as deadline() does.
  return resolveIngressOptions(options, SERVER_LABEL)
}
