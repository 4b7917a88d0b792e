import { type Clock, systemClock } from '@hourglass/core'

/** When a headers timeout with 0 bytes received may be retried: `idempotent` methods/keys only, always (`true`), never (`false`). */
export type EmptyReadRetry = 'idempotent' | boolean

export interface RetryOptions {
  /** Retry once a connect failure that failed in under 50 ms (refused, reset). Default `true`. */
  fastConnectFailure?: boolean
  /** Retry once a headers timeout with 0 bytes received. Default `'idempotent'`. */
  emptyRead?: EmptyReadRetry
  /**
   * Response statuses retried once when the request is safe to repeat (same
   * rule as `emptyRead`), after `Retry-After` if it fits in the budget.
   * Default `[]`: answers are returned, not retried. A 504 carrying
   * `x-deadline-expired: 1` is never retried.
   */
  statuses?: readonly number[]
  /**
   * The longest `Retry-After` that is waited out, in ms. A listed status that
   * asks for longer is returned as it is (the `retry-skipped` event says
   * `retry-after-too-long`); one that asks for more than the deadline leaves
   * is returned too (`no-budget`). Default 60000.
   */
  maxRetryAfterMs?: number
}

/** A `dns.lookup`-compatible function (the one `net.connect` takes). */
export type LookupFunction = (
  hostname: string,
  options: { family?: number; all?: boolean },
  callback: (
    error: NodeJS.ErrnoException | null,
    address: string | { address: string; family: number }[],
    family?: number,
  ) => void,
) => void

export interface EgressOptions {
  /** Name lookup limit, ms. Default 1000. `0` = no own limit (the deadline still applies). */
  dnsTimeoutMs?: number
  /** TCP connect + TLS handshake limit, ms. Default 3000. `0` = no own limit. */
  connectTimeoutMs?: number
  /** Request sent → response headers (first byte) limit, ms. Default 10000. `0` = no own limit. */
  headersTimeoutMs?: number
  /** Longest silence between two body chunks, ms. Default 10000. `0` = no own limit. */
  bodyTimeoutMs?: number
  /** With less than this left on the deadline, fail at once without touching the network. Default 5. */
  minBudgetMs?: number
  /** Retry rules; `false` turns every retry off. */
  retry?: RetryOptions | false
  /** Time source for the phase timers; default the deadline's clock, else the system clock. */
  clock?: Clock
  /** Name lookup to use instead of the default (coalesced `dns.lookup`). */
  lookup?: LookupFunction
}

export interface ResolvedRetry {
  fastConnectFailure: boolean
  emptyRead: EmptyReadRetry
  statuses: readonly number[]
  maxRetryAfterMs: number
}

export interface PhaseLimits {
  dnsTimeoutMs: number
  connectTimeoutMs: number
  headersTimeoutMs: number
  bodyTimeoutMs: number
}

export interface ResolvedOptions extends PhaseLimits {
  minBudgetMs: number
  retry: ResolvedRetry | false
  clock: Clock | undefined
  lookup: LookupFunction | undefined
}

export function resolveRetry(retry: RetryOptions | false | undefined): ResolvedRetry | false {
  if (retry === false) return false
  return {
    fastConnectFailure: retry?.fastConnectFailure ?? true,
    emptyRead: retry?.emptyRead ?? 'idempotent',
    statuses: retry?.statuses ?? [],
    maxRetryAfterMs: nonNegative('retry.maxRetryAfterMs', retry?.maxRetryAfterMs, 60_000),
  }
}

export function resolveOptions(options: EgressOptions = {}): ResolvedOptions {
  return {
    dnsTimeoutMs: nonNegative('dnsTimeoutMs', options.dnsTimeoutMs, 1000),
    connectTimeoutMs: nonNegative('connectTimeoutMs', options.connectTimeoutMs, 3000),
    headersTimeoutMs: nonNegative('headersTimeoutMs', options.headersTimeoutMs, 10_000),
    bodyTimeoutMs: nonNegative('bodyTimeoutMs', options.bodyTimeoutMs, 10_000),
    minBudgetMs: nonNegative('minBudgetMs', options.minBudgetMs, 5),
    retry: resolveRetry(options.retry),
    clock: options.clock,
    lookup: options.lookup,
  }
}

/** A call's retry rules: the per-call value (if any) replaces the factory's, field by field. */
export function mergeRetry(
  base: ResolvedRetry | false,
  override: RetryOptions | false | undefined,
): ResolvedRetry | false {
  if (override === undefined) return base
  if (override === false) return false
  return resolveRetry({ ...(base === false ? {} : base), ...override })
}

export function clockFor(options: ResolvedOptions, deadlineClock: Clock | undefined): Clock {
  return options.clock ?? deadlineClock ?? systemClock
}

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
    throw new TypeError(`${name} must be a number ≥ 0 (ms), got ${String(value)}`)
  }
  return value
}
