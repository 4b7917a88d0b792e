import {
  type Clock,
  describeValue,
  isClock,
  MAX_TIMER_MS,
  optionError,
  refuseUnknownOptions,
  systemClock,
} from '@hourglass/core'

/**
 * When an empty read — a headers timeout with 0 bytes received, or the
 * connection closed before any byte of the answer — may be retried:
 * `idempotent` methods/keys only, always (`true`), never (`false`).
 */
export type EmptyReadRetry = 'idempotent' | boolean

/** Retry rules. A field left undefined takes the default (per call: the factory's value). */
export interface RetryOptions {
  /** Retry once a connect failure that failed in under 50 ms (refused, reset). Default `true`. */
  fastConnectFailure?: boolean | undefined
  /**
   * Retry once a headers timeout with 0 bytes received, or a connection
   * closed before any byte of the answer (a stale keep-alive socket).
   * Default `'idempotent'`.
   */
  emptyRead?: EmptyReadRetry | undefined
  /**
   * Response statuses retried once when the request is safe to repeat (same
   * rule as `emptyRead`), after `Retry-After` if it fits in the budget.
   * Default `[]`: answers are returned, not retried. A 504 carrying
   * `x-deadline-expired: 1` is never retried.
   */
  statuses?: readonly number[] | undefined
  /**
   * The longest `Retry-After` that is waited out, in ms. A listed status that
   * asks for longer is returned as it is (the `retry-skipped` event says
   * `retry-after-too-long`); one that asks for more than the deadline leaves
   * is returned too (`no-budget`). Default 60000.
   */
  maxRetryAfterMs?: number | undefined
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

/** The phase limits past 2³¹−1 ms are 2³¹−1 (24.8 days): effectively none. */
export interface EgressOptions {
  /** Name lookup limit, ms. Default 1000. `0` = no own limit (the deadline still applies). */
  dnsTimeoutMs?: number
  /** TCP connect + TLS handshake limit, ms. Default 3000. `0` = no own limit. */
  connectTimeoutMs?: number
  /** Last piece of the request sent (each upload chunk restarts it) → response headers (first byte) limit, ms. Default 10000. `0` = no own limit. */
  headersTimeoutMs?: number
  /** Longest silence between two body chunks, ms. Default 10000. `0` = no own limit. */
  bodyTimeoutMs?: number
  /**
   * With less than this left on the deadline, fail at once without touching
   * the network. Default 5. Under 2³¹−1 ms: one that large refused every call.
   */
  minBudgetMs?: number
  /** Retry rules; `false` turns every retry off. */
  retry?: RetryOptions | false
  /** Time source for the phase timers; default the deadline's clock, else the system clock. */
  clock?: Clock
  /** Name lookup to use instead of the default (coalesced `dns.lookup`). */
  lookup?: LookupFunction
  /**
   * A name with several addresses tries them in turn (Node's Happy
   * Eyeballs); `false` connects to the first alone, as `net.connect` does.
   * Default `net.getDefaultAutoSelectFamily()` (true unless turned off).
   * The connector's (`createConnector`, `createFetch`'s own Agent): undici
   * hands a connector function none of its Agent's own.
   */
  autoSelectFamily?: boolean
  /**
   * The most one address of several is given before the next is tried, ms
   * (`net.connect`'s `autoSelectFamilyAttemptTimeout`). Default
   * `net.getDefaultAutoSelectFamilyAttemptTimeout()` (250). Never more than
   * half the connect's budget — `min(connectTimeoutMs, time left)` — so a
   * blackholed first address leaves the next one time; at least 10 ms,
   * Node's floor. `0` = no limit of its own (that half still applies).
   */
  autoSelectFamilyAttemptTimeoutMs?: number
}

export interface ResolvedRetry {
  fastConnectFailure: boolean
  emptyRead: EmptyReadRetry
  statuses: readonly number[]
  maxRetryAfterMs: number
  /**
   * Retry once an HTTP/2 stream the server refused (`REFUSED_STREAM`). No
   * `RetryOptions` key names it — it is always safe, so always on — but a
   * factory's `retry: false` turns it off too: a call's own `retry` over
   * that turns on only the rules it names, and it names not this one.
   */
  refusedStream: boolean
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
  /** undefined: Node's default, read at each connect (`net.setDefaultAutoSelectFamily` applies). */
  autoSelectFamily: boolean | undefined
  /** undefined: Node's default, read at each connect. */
  autoSelectFamilyAttemptTimeoutMs: number | undefined
}

export function resolveRetry(retry: RetryOptions | false | undefined): ResolvedRetry | false {
  if (retry === false) return false
  if (retry !== undefined && (typeof retry !== 'object' || retry === null)) {
    throw new TypeError(
      `retry must be an object of retry rules or false, got ${describeValue(retry)}`,
    )
  }
  // A key that is no rule (`{ status: [503] }`) is refused, as for the options.
  refuseUnknownOptions(retry, RETRY_KEYS, 'retry', { what: 'retry rule' })
  return resolveRules(retry, true)
}

/** A retry object's rules, each checked, defaults for the rest (its keys already checked). */
function resolveRules(retry: RetryOptions | undefined, refusedStream: boolean): ResolvedRetry {
  return {
    fastConnectFailure: boolean('retry.fastConnectFailure', retry?.fastConnectFailure, true),
    emptyRead: emptyRead(retry?.emptyRead),
    statuses: statuses(retry?.statuses),
    maxRetryAfterMs: nonNegative('retry.maxRetryAfterMs', retry?.maxRetryAfterMs, 60_000),
    refusedStream,
  }
}

/**
 * `owner` is the factory that takes the options (`'createFetch()'`), named
 * where an error is about what it would do.
 */
export function resolveOptions(options: EgressOptions, owner: string): ResolvedOptions {
  return {
    dnsTimeoutMs: phaseLimit('dnsTimeoutMs', options.dnsTimeoutMs, 1000),
    connectTimeoutMs: phaseLimit('connectTimeoutMs', options.connectTimeoutMs, 3000),
    headersTimeoutMs: phaseLimit('headersTimeoutMs', options.headersTimeoutMs, 10_000),
    bodyTimeoutMs: phaseLimit('bodyTimeoutMs', options.bodyTimeoutMs, 10_000),
    minBudgetMs: minBudget(options.minBudgetMs, owner),
    retry: resolveRetry(options.retry),
    clock: clock(options.clock),
    lookup: lookup(options.lookup),
    autoSelectFamily: optionalBoolean('autoSelectFamily', options.autoSelectFamily),
    autoSelectFamilyAttemptTimeoutMs:
      options.autoSelectFamilyAttemptTimeoutMs == null
        ? undefined
        : nonNegative(
            'autoSelectFamilyAttemptTimeoutMs',
            options.autoSelectFamilyAttemptTimeoutMs,
            0,
          ),
  }
}

/**
 * A call's retry rules: the per-call value (if any) replaces the factory's,
 * field by field; a field the call leaves undefined keeps the factory's.
 * A factory's `false` is every rule off (`ALL_OFF`, and the refused-stream
 * rule, which no key names), so a call that turns one on gets that one
 * alone: merged over `{}`, the rules it did not name came back at their
 * defaults (`fastConnectFailure`, `emptyRead`, a refused stream).
 */
export function mergeRetry(
  base: ResolvedRetry | false,
  override: RetryOptions | false | undefined,
): ResolvedRetry | false {
  if (override === undefined) return base
  if (override === false) return false
  if (typeof override !== 'object' || override === null) return resolveRetry(override)
  refuseUnknownOptions(override, RETRY_KEYS, 'retry', { what: 'retry rule' })
  const merged: RetryOptions = { ...(base === false ? ALL_OFF : base) }
  for (const key of RETRY_KEYS) {
    const value = override[key]
    // A per-call `maxRetryAfterMs: null` is its default, as at the factory:
    // here the factory's (`nonNegative`). The other rules refuse null.
    if (value === undefined || (value === null && key === 'maxRetryAfterMs')) continue
    ;(merged as Record<string, unknown>)[key] = value
  }
  return resolveRules(merged, base !== false && base.refusedStream)
}

const RETRY_KEYS = ['fastConnectFailure', 'emptyRead', 'statuses', 'maxRetryAfterMs'] as const

/** `retry: false` as rules: none retries (`maxRetryAfterMs` is a bound, not a rule: its default). */
const ALL_OFF: RetryOptions = { fastConnectFailure: false, emptyRead: false, statuses: [] }

/** The keys of `EgressOptions`. */
const EGRESS_KEYS = [
  'dnsTimeoutMs',
  'connectTimeoutMs',
  'headersTimeoutMs',
  'bodyTimeoutMs',
  'minBudgetMs',
  'retry',
  'clock',
  'lookup',
  'autoSelectFamily',
  'autoSelectFamilyAttemptTimeoutMs',
] as const

/**
 * What `createConnector` and `deadlineInterceptor` take: `EgressOptions` and
 * `tls` (the connector's; the interceptor takes it so that one options object
 * serves both, as the README composes them).
 */
export const CONNECTOR_OPTION_NAMES: readonly string[] = [...EGRESS_KEYS, 'tls']
/** What `createFetch` takes: the connector's options and `dispatcher`. */
export const FETCH_OPTION_NAMES: readonly string[] = [...CONNECTOR_OPTION_NAMES, 'dispatcher']

export function clockFor(options: ResolvedOptions, deadlineClock: Clock | undefined): Clock {
  return options.clock ?? deadlineClock ?? systemClock
}

/**
 * A limit in ms: a finite number ≥ 0 (`0` = no own limit). Infinity is
 * refused: it would be a timer of 24.8 days, or a budget no call has.
 * `null` is the default, as every ingress reads it (express's `deadline()`,
 * the gRPC interceptors): a config value that may be null (`env.X ?? null`,
 * a JSON file) was refused here alone.
 */
function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined || value === null) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw optionError(name, 'a finite number ≥ 0 (ms)', value)
  }
  return value
}

/**
 * A phase limit: `nonNegative`, cut to 2³¹−1 ms (24.8 days), the longest
 * timer Node has — it is effectively none. Past it Node fires a timer after
 * 1 ms: the system clock cuts its timers, but a clock of the app's own
 * (`clock`, or a deadline's) that hands them to `setTimeout` as they are
 * failed every call at once (`headersTimeoutMs: 1e12`: HEADERS_TIMEOUT
 * 2 ms in). Cut here once, not per timer.
 */
function phaseLimit(name: string, value: number | undefined, fallback: number): number {
  return Math.min(nonNegative(name, value, fallback), MAX_TIMER_MS)
}

/**
 * `minBudgetMs`: ≥ 0 and under 2³¹−1 ms, as the gRPC client's. No deadline
 * that came over the wire is that long (every ingress cuts its `maxMs` to
 * it, as `writeDeadline` does the header), so a minimum that large refused
 * every call under a deadline unsent, at run time, never at boot — a
 * timestamp (`Date.now()`) where a duration belongs, not a setting.
 */
function minBudget(value: number | undefined, owner: string): number {
  const ms = nonNegative('minBudgetMs', value, 5)
  if (ms >= MAX_TIMER_MS) {
    const error = optionError(
      'minBudgetMs',
      `a finite number ≥ 0 and < ${MAX_TIMER_MS} (ms, 2³¹−1)`,
      ms,
    )
    // The connector reads no minBudgetMs: options shared with the interceptor
    // or createFetch are refused for what those would do.
    error.message +=
      owner === 'createConnector()'
        ? ': a deadlineInterceptor() or createFetch() given these options would refuse every call under a deadline unsent'
        : `: ${owner} would refuse every call under a deadline unsent`
    throw error
  }
  return ms
}

/**
 * Checked here, not on first use: a lookup that is not a function failed
 * every call as `DNS_FAILED` (a name that "does not resolve", never
 * retried), and a clock without its methods every call with a bare
 * TypeError from inside undici's dispatch.
 */
function lookup(value: LookupFunction | undefined): LookupFunction | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new TypeError(
      `lookup must be a dns.lookup-compatible function, got ${describeValue(value)}`,
    )
  }
  return value
}

function clock(value: Clock | undefined): Clock | undefined {
  if (value === undefined || isClock(value)) return value
  const got =
    typeof value === 'object' && value !== null ? 'an object without them' : describeValue(value)
  throw new TypeError(
    `clock must be a Clock (now, setTimeout and clearTimeout functions), got ${got}`,
  )
}

function boolean(name: string, value: boolean | undefined, fallback: boolean): boolean {
  if (value === undefined) return fallback
  if (typeof value !== 'boolean') {
    throw new TypeError(`${name} must be true or false, got ${describeValue(value)}`)
  }
  return value
}

/** A boolean, or `undefined` / `null` for the default (undefined: decided where it is used). */
function optionalBoolean(name: string, value: boolean | undefined): boolean | undefined {
  if (value === undefined || value === null) return undefined
  return boolean(name, value, false)
}

/** Only the three documented values: a truthy string ('false', 'never') must not widen retries to every method. */
function emptyRead(value: EmptyReadRetry | undefined): EmptyReadRetry {
  if (value === undefined) return 'idempotent'
  if (value !== 'idempotent' && value !== true && value !== false) {
    throw new TypeError(
      `retry.emptyRead must be 'idempotent', true or false, got ${describeValue(value)}`,
    )
  }
  return value
}

function statuses(value: readonly number[] | undefined): readonly number[] {
  if (value === undefined) return []
  // An answer below 400 is never retried (decideRetry): listed, it did nothing.
  const rule =
    'an array of HTTP error statuses (integers 400–599: an answer below 400 is never retried)'
  if (!Array.isArray(value)) throw optionError('retry.statuses', rule, value)
  const bad = value.findIndex(
    (status) => !(Number.isInteger(status) && status >= 400 && status <= 599),
  )
  if (bad !== -1) {
    // The entry itself: "got an array" would not say which value is wrong.
    const error = optionError('retry.statuses', rule, value[bad])
    error.message += ` at index ${bad}`
    throw error
  }
  // A copy: the caller's array changed afterwards (a push of '503', a 2xx)
  // would change the rules unchecked.
  return Object.freeze([...value])
}
