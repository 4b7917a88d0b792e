import { DEFAULT_INGRESS_MAX_MS, MAX_TIMER_MS, refuseUnknownOptions } from '@hourglass/core'
import { positiveOrNone, underWireMax } from './validateMs.js'

/** Options of the client `deadlineInterceptor()`. */
export interface ClientDeadlineOptions {
  /**
   * Kept back from the caller's deadline for handling the answer, in ms:
   * each call gets `min(its own deadline, remaining − reserveMs)`. Default 0
   * (an ingress such as `deadline()` already keeps its own reserve to answer).
   */
  reserveMs?: number | undefined
  /**
   * With less than this left (after `reserveMs`), fail at once with
   * `DEADLINE_EXCEEDED` without sending anything. Default 5, like
   * @hourglass/fetch. 0 = only when nothing at all is left.
   */
  minBudgetMs?: number | undefined
  /**
   * Budget for a unary or client-streaming call that has no deadline at all
   * (none in the context, no `withCallDeadline`, no `deadline` call option),
   * in ms: sent as its gRPC deadline, so a server that never answers ends it
   * `DEADLINE_EXCEEDED` instead of leaving it pending forever. Default 30000,
   * the most a Hourglass server gives any call (its `maxMs`). Server-streaming
   * and bidi calls (subscriptions, watches) get none. `Infinity` = none: such
   * calls are left alone. Must be > 0 and at most 2^31−1 (grpc-js's server
   * reads a longer `grpc-timeout` wrapped into the past).
   */
  defaultMs?: number | undefined
}

export interface ResolvedClientOptions {
  reserveMs: number
  minBudgetMs: number
  /** Infinity: no default. */
  defaultMs: number
}

const OPTION_NAMES = Object.keys({
  reserveMs: true,
  minBudgetMs: true,
  defaultMs: true,
} satisfies Record<keyof ClientDeadlineOptions, true>)

/** Another library's word for the no-deadline budget. */
const MEANT_INSTEAD: ReadonlyMap<string, string> = new Map([
  ['timeout', 'defaultMs'],
  ['timeoutMs', 'defaultMs'],
])

/** How its option errors name it, as the server interceptor's name theirs. */
const NAME = 'deadlineInterceptor'

export function resolveClientOptions(options: ClientDeadlineOptions): ResolvedClientOptions {
  // Ignored, a typo (`{ reserveMS: 50 }`) left the default in force unseen.
  refuseUnknownOptions(options, OPTION_NAMES, 'deadlineInterceptor()', { meant: MEANT_INSTEAD })
  // Named as the server interceptor's errors are (`deadlineServerInterceptor: `):
  // a bare "reserveMs must be …" did not say whose, beside an ingress's.
  const reserveMs = underWireMax(`${NAME}: reserveMs`, options.reserveMs ?? 0)
  const minBudgetMs = underWireMax(`${NAME}: minBudgetMs`, options.minBudgetMs ?? 5)
  if (reserveMs + minBudgetMs >= MAX_TIMER_MS) {
    // A call needs more than both left: none that gRPC carries has, as a
    // fixed reserve not under its budget is refused by `deadline()`.
    throw new RangeError(
      `${NAME}: reserveMs (${reserveMs}) + minBudgetMs (${minBudgetMs}) must be less than ${MAX_TIMER_MS} ms (2³¹−1, the longest deadline gRPC carries): every call under a deadline would fail DEADLINE_EXCEEDED unsent`,
    )
  }
  return {
    reserveMs,
    minBudgetMs,
    // The safe behaviour is the default: a call with no deadline anywhere hung
    // for as long as its server did.
    defaultMs: positiveOrNone(`${NAME}: defaultMs`, options.defaultMs ?? DEFAULT_INGRESS_MAX_MS),
  }
}
