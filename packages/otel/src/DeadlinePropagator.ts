import {
  type Clock,
  currentDeadline,
  DEADLINE_HEADER,
  DEFAULT_INGRESS_MAX_MS,
  type Deadline,
  type DeadlineSource,
  isClock,
  isDeadline,
  KNOWN_DEADLINE_SOURCES,
  knownDeadlineSources,
  optionError,
  readDeadline,
  refuseUnknownOptions,
  systemClock,
  writeDeadline,
} from '@hourglass/core'
import {
  type Context,
  createContextKey,
  type TextMapGetter,
  type TextMapPropagator,
  type TextMapSetter,
} from '@opentelemetry/api'

/**
 * A budget that arrived in a request's headers, as `DeadlinePropagator.extract`
 * stores it in the OpenTelemetry `Context`. A plain record, not a `Deadline`:
 * extracting must not start a timer per request that nobody would dispose.
 */
export interface PropagatedDeadline {
  /** The budget that arrived, in ms (after clamping to `maxMs`). */
  readonly budgetMs: number
  /** `clock.now()` when it arrived, in ms. */
  readonly receivedAt: number
  readonly source: DeadlineSource
  readonly clamped: boolean
  readonly clock: Clock
}

/**
 * The `Context` key under which the propagator keeps the deadline: a
 * `PropagatedDeadline` after `extract`, or a `Deadline` you put there yourself
 * (`context.active().setValue(DEADLINE_CONTEXT_KEY, deadline)`).
 */
export const DEADLINE_CONTEXT_KEY: symbol = createContextKey('@hourglass/otel deadline')

export interface DeadlinePropagatorOptions {
  /**
   * Inbound budgets above this are cut to it, in ms. Default 30 000, as every
   * ingress (core's `DEFAULT_INGRESS_MAX_MS`): the header is the caller's, so
   * untrusted. `Infinity` lifts the cap (2^31−1, the longest timer).
   */
  maxMs?: number | undefined
  /** Inbound headers to trust. Default: all three Hourglass reads. `[]` extracts nothing. */
  sources?: readonly DeadlineSource[] | undefined
  /** Time source for the age of an extracted budget. Default: the system clock. */
  clock?: Clock | undefined
}

const OPTION_NAMES = Object.keys({
  maxMs: true,
  sources: true,
  clock: true,
} satisfies Record<keyof DeadlinePropagatorOptions, true>)

/** The ingresses (`deadline()`, the gRPC server interceptor) call the same list `trust`. */
const MEANT_INSTEAD: ReadonlyMap<string, string> = new Map([['trust', 'sources']])

/**
 * An OpenTelemetry `TextMapPropagator` for `x-deadline-remaining-ms`, so a
 * service that only uses OpenTelemetry auto-instrumentation still passes the
 * budget on.
 *
 * - `inject` writes the whole ms left on Hourglass's current deadline
 *   (`currentDeadline()`), or the tighter of it and a `Deadline` you stored
 *   under `DEADLINE_CONTEXT_KEY`; the budget `extract` stored only where there
 *   is no current deadline (see `remainingIn`). It writes nothing without a deadline, and
 *   leaves a carrier alone that already has the header, in any letter case (someone, e.g.
 *   `@hourglass/fetch`, wrote a fresher value). A cancelled deadline (the
 *   client left) writes 0, as an expired one does.
 * - `extract` reads the inbound headers with `readDeadline` (smallest valid
 *   value wins, clamped to `maxMs`) and stores a `PropagatedDeadline`.
 */
export class DeadlinePropagator implements TextMapPropagator {
  readonly #maxMs: number
  readonly #sources: readonly DeadlineSource[] | undefined
  readonly #clock: Clock

  constructor(options: DeadlinePropagatorOptions = {}) {
    // Checked here, once: readDeadline reads a negative (or null) maxMs as 0,
    // which made every extracted budget 0 ms — every request downstream a
    // 504 — and a bad `sources` or `clock` threw from every extract, where
    // OpenTelemetry's CompositePropagator swallows it (no deadline, no error).
    // An unknown key too, as deadline() and createFetch() refuse one:
    // ignored, `{ maxMS: 5000 }` left every inbound budget capped at 30 s.
    refuseUnknownOptions(options, OPTION_NAMES, 'new DeadlinePropagator()', {
      meant: MEANT_INSTEAD,
    })
    const { maxMs, sources, clock } = options
    if (maxMs !== undefined && (typeof maxMs !== 'number' || !(maxMs >= 0))) {
      throw optionError('DeadlinePropagator: maxMs', 'a number of ms ≥ 0', maxMs)
    }
    if (sources !== undefined && !Array.isArray(sources)) {
      throw optionError(
        'DeadlinePropagator: sources',
        `an array of these header names: ${KNOWN_DEADLINE_SOURCES.join(', ')}`,
        sources,
      )
    }
    // Each one known, in any case, as every other taker of such a list reads it.
    const trusted =
      sources === undefined
        ? undefined
        : knownDeadlineSources(sources, 'DeadlinePropagator: sources')
    if (clock !== undefined && !isClock(clock)) {
      throw optionError(
        'DeadlinePropagator: clock',
        'a Clock (now, setTimeout and clearTimeout functions)',
        clock,
      )
    }
    this.#maxMs = maxMs ?? DEFAULT_INGRESS_MAX_MS
    this.#sources = trusted
    this.#clock = clock ?? systemClock
  }

  inject(context: Context, carrier: unknown, setter: TextMapSetter): void {
    if (hasHeader(carrier)) return
    const ms = remainingIn(context)
    if (ms !== undefined) setter.set(carrier, DEADLINE_HEADER, String(ms))
  }

  extract(context: Context, carrier: unknown, getter: TextMapGetter): Context {
    const headers = {
      // As it came (typed a string, but read as anything): readDeadline reads
      // what a `get` answers as it reads a record's value — several values a
      // repeated header (refused), one a value, a number its digits. Joined
      // here, a carrier record built in code (`{ 'x-deadline-remaining-ms':
      // 400 }`, which the default getter hands on as it is) threw "value.join
      // is not a function", read as an unreadable header: no deadline.
      get: (name: string) => (getter.get(carrier, name) ?? null) as string | null,
    }
    const { ms, source, clamped } = readDeadline(headers, {
      maxMs: this.#maxMs,
      sources: this.#sources,
    })
    if (ms === undefined || source === undefined) return context
    const propagated: PropagatedDeadline = {
      budgetMs: ms,
      receivedAt: this.#clock.now(),
      source,
      clamped,
      clock: this.#clock,
    }
    return context.setValue(DEADLINE_CONTEXT_KEY, propagated)
  }

  fields(): string[] {
    return [DEADLINE_HEADER]
  }
}

/**
 * The whole ms left to send on, or undefined when there is no finite deadline
 * (or an observe-only deadline has passed: dark mode must not make the next
 * hop 504). A cancelled deadline (the client left) has 0 left, whatever its expiry.
 *
 * The tighter of a `Deadline` you stored in the context and the current
 * Hourglass deadline. The budget `extract` stored counts only where there is
 * no current deadline: one made from the same headers by an ingress
 * (`deadline()`, the gRPC server interceptor) applied that ingress's `trust`
 * and `maxMs`, and the propagator's own defaults (every header trusted, a
 * 30 s cap) undid them — `deadline({ maxMs: 300_000 })` sent 30 000 on, and
 * `deadline({ trust: [] })` sent on the 0 of a header it refused.
 */
export function remainingIn(context: Context): number | undefined {
  const candidates: number[] = []
  const deadline = currentDeadline()
  const stored = context.getValue(DEADLINE_CONTEXT_KEY)
  // By shape, not `instanceof`: a Deadline of another installed copy of core
  // (what `currentDeadline()` may return, and so what gets stored) was
  // neither this copy's nor a PropagatedDeadline, and nothing was written.
  if (isDeadline(stored)) {
    const ms = msLeft(stored)
    if (ms !== undefined) candidates.push(ms)
  } else if (deadline === undefined && isPropagated(stored)) {
    const age = stored.clock.now() - stored.receivedAt
    candidates.push(Math.max(0, Math.floor(stored.budgetMs - age)))
  }
  const current = msLeft(deadline)
  if (current !== undefined) candidates.push(current)
  return candidates.length === 0 ? undefined : Math.min(...candidates)
}

/**
 * What `writeDeadline` would write, except for a deadline that has ended
 * with a reason — cancelled (the client left, in dark mode too, or one with
 * no expiry), or expired while enforcing: 0. `@hourglass/fetch` and the gRPC
 * client refuse to send under such a deadline at all; a propagator cannot
 * stop the request, so it tells the next hop there is no time, which then
 * refuses at once. `writeDeadline` goes by the expiry alone, and wrote a
 * live budget (`999`) for work nobody waits for any more.
 */
function msLeft(deadline: Deadline | undefined): number | undefined {
  if (deadline?.done === true && deadline.reason !== undefined) return 0
  return writeDeadline({}, deadline)
}

function isPropagated(value: unknown): value is PropagatedDeadline {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as PropagatedDeadline).budgetMs === 'number' &&
    typeof (value as PropagatedDeadline).receivedAt === 'number'
  )
}

/**
 * Whether the carrier holds the header, in any letter case. A carrier with
 * `has()` (else with `get()`) is asked, then its `keys()` read too: `Headers.has` ignores case,
 * but a `Map`'s does not, and a Map holding `X-Deadline-Remaining-Ms` was
 * given a second, lower-case copy with another value beside it.
 */
function hasHeader(carrier: unknown): boolean {
  if (typeof carrier !== 'object' || carrier === null) return false
  const c = carrier as { has?: unknown; get?: unknown; keys?: unknown }
  if (typeof c.has === 'function') {
    if ((c.has as (name: string) => unknown).call(carrier, DEADLINE_HEADER)) return true
  } else if (typeof c.get === 'function') {
    // A carrier with get() alone: grpc-js's Metadata (instrumentation-grpc
    // injects into it), whose set() replaced the fresher value already there.
    // It answers [] for a header it lacks; a value is a non-empty string or
    // list (a Map-like carrier answering '' or 0 for a missing one is no header).
    const value: unknown = (c.get as (name: string) => unknown).call(carrier, DEADLINE_HEADER)
    if ((typeof value === 'string' || Array.isArray(value)) && value.length > 0) return true
  }
  const keys: Iterable<unknown> =
    typeof c.keys === 'function'
      ? (c.keys as () => Iterable<unknown>).call(carrier)
      : Object.keys(carrier)
  for (const key of keys) {
    if (typeof key === 'string' && key.toLowerCase() === DEADLINE_HEADER) return true
  }
  return false
}
