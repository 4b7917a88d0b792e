import { type Clock, isClock, MAX_TIMER_MS, systemClock } from './clock.js'
import { DEADLINE_SOURCES, type DeadlineSource } from './headerNames.js'
import { knownDeadlineSources } from './knownDeadlineSources.js'
import { optionError } from './optionError.js'
import { MIN_RESERVE_MS } from './timerLateness.js'

/**
 * What every ingress (the Express middleware, the gRPC server interceptor)
 * is configured with; each documents them in its own words.
 */
export interface IngressOptions {
  defaultMs?: number | undefined
  maxMs?: number | undefined
  reserveMs?: number | undefined
  trust?: readonly DeadlineSource[] | undefined
  strict?: boolean | undefined
  mode?: 'enforce' | 'observe' | undefined
  clock?: Clock | undefined
}

/**
 * Names people reach for in an ingress's options that no edit distance
 * leads from — a value of another option (`observe` is `mode: 'observe'`),
 * or another library's word for the budget (connect-timeout's `timeout`) —
 * and what they meant: `refuseUnknownOptions`' `meant` for every ingress.
 */
export const INGRESS_MEANT_INSTEAD: ReadonlyMap<string, string> = new Map([
  ['observe', "mode: 'observe'"],
  ['enforce', "mode: 'enforce'"],
  ['timeout', 'defaultMs'],
  ['timeoutMs', 'defaultMs'],
])

/**
 * How an ingress names itself and its refusal in the option errors core
 * raises for it. Without one, the words are HTTP's (Express's `deadline()`):
 * a gRPC server's error spoke of 504s and deadline headers.
 */
export interface IngressLabel {
  /** Prefixed to every message: `deadlineServerInterceptor`. */
  name: string
  /** What a request whose time is spent is answered: `DEADLINE_EXCEEDED`. */
  refusal: string
  /** Every request it serves: `every call`. */
  every: string
  /** Every one that `defaultMs` bounds: `every unary or client-streaming call without a deadline`. */
  everyWithoutDeadline: string
}

export interface ResolvedIngressOptions {
  defaultMs: number
  maxMs: number
  /** undefined: adaptive (`adaptiveReserveMs()`), read per request. */
  reserveMs: number | undefined
  trust: readonly DeadlineSource[]
  strict: boolean
  observe: boolean
  clock: Clock
}

/**
 * The most an inbound budget may be unless an ingress says otherwise: 30 s.
 * The value is the caller's, so untrusted; every ingress (the Express
 * middleware, the gRPC server interceptor, otel's `DeadlinePropagator`)
 * clamps to it by default.
 */
export const DEFAULT_INGRESS_MAX_MS = 30_000

/**
 * Validate an ingress's options once, when it is created — a typo fails at
 * boot, not per request — with a message that names the field. Defaults:
 * `defaultMs` 2000, `maxMs` 30000 or `defaultMs` when that is larger (at
 * most 2³¹−1), `reserveMs` adaptive,
 * the three deadline headers trusted (`x-stainless-timeout` only when
 * listed), not strict, enforcing, the system clock. Refused as outages,
 * not typos: a fixed `reserveMs` not under `maxMs` and `defaultMs`, and,
 * with the default reserve, a `maxMs` or `defaultMs` at or under its 10 ms
 * floor (every request, or every one without a deadline, answered on
 * arrival). `label` names the ingress and its answer in the messages
 * (default: HTTP's words, no prefix).
 */
export function resolveIngressOptions(
  options: IngressOptions,
  label?: IngressLabel,
): ResolvedIngressOptions {
  if (label === undefined) return resolve(options, undefined)
  try {
    return resolve(options, label)
  } catch (error) {
    // Every refusal names the ingress it is for, as its unknown-option error does.
    if (error instanceof Error) error.message = `${label.name}: ${error.message}`
    throw error
  }
}

function resolve(options: IngressOptions, label: IngressLabel | undefined): ResolvedIngressOptions {
  // A `defaultMs` above the default cap, with no `maxMs` of its own, is the
  // budget the app asked for: cut to 30 s, `{ defaultMs: 60_000 }` for a
  // model route silently gave 30 s. The cap follows it up (a caller may ask
  // for what a caller without a header gets, no more); a `maxMs` given still
  // cuts it. Express and gRPC alike.
  const askedMs = options.defaultMs
  const defaultCap =
    typeof askedMs === 'number' && Number.isFinite(askedMs) && askedMs > DEFAULT_INGRESS_MAX_MS
      ? askedMs
      : DEFAULT_INGRESS_MAX_MS
  const maxMs = Math.min(positive('maxMs', options.maxMs ?? defaultCap), MAX_TIMER_MS)
  const defaultMs = Math.min(positive('defaultMs', options.defaultMs ?? 2000), maxMs)
  // `null` is the default, as for every other option here (it was refused).
  const reserveMs = options.reserveMs ?? undefined
  if (
    reserveMs !== undefined &&
    (typeof reserveMs !== 'number' || !Number.isFinite(reserveMs) || reserveMs < 0)
  ) {
    throw optionError('reserveMs', 'a finite number ≥ 0', reserveMs)
  }
  // The default reserve is adaptive but never below its floor: a budget at
  // or under that floor is spent on arrival — every request (or every one
  // without a deadline header) answered 504 at once, an outage, not a typo.
  if (reserveMs === undefined) {
    for (const [name, ms, who] of [
      ['maxMs', maxMs, label?.every ?? 'every request'],
      [
        'defaultMs',
        defaultMs,
        label?.everyWithoutDeadline ?? 'every request without a deadline header',
      ],
    ] as const) {
      if (ms <= MIN_RESERVE_MS) {
        throw new RangeError(
          `${name} (${ms}) must be more than the default reserveMs's floor (${MIN_RESERVE_MS} ms): ${who} would be answered ${label?.refusal ?? '504'} on arrival; pass a smaller reserveMs (0 for none)`,
        )
      }
    }
  }
  // A fixed reserve as large as the whole budget leaves the handler nothing:
  // every request (or every one without a deadline) would be answered on
  // arrival (a 504, gRPC's DEADLINE_EXCEEDED), an outage, not a typo.
  // Express and gRPC alike.
  if (reserveMs !== undefined) {
    for (const [name, ms, who] of [
      ['maxMs', maxMs, label?.every ?? 'every request'],
      [
        'defaultMs',
        defaultMs,
        label?.everyWithoutDeadline ?? 'every request without a deadline header',
      ],
    ] as const) {
      if (reserveMs >= ms) {
        throw new RangeError(
          `reserveMs (${reserveMs}) must be less than ${name} (${ms}): ${who} would be answered ${label?.refusal ?? '504'} on arrival`,
        )
      }
    }
  }
  const mode = options.mode ?? 'enforce'
  if (mode !== 'enforce' && mode !== 'observe') {
    // As every other option: `String` threw for an object without a
    // prototype, and showed one whose toString() says 'observe' as `observe`.
    throw optionError('mode', "'enforce' or 'observe'", mode)
  }
  const given = options.trust ?? DEADLINE_SOURCES
  if (!Array.isArray(given)) {
    // A string would be read letter by letter ("unknown header g").
    throw optionError('trust', 'an array of header names', given)
  }
  const trust = knownDeadlineSources(given, 'trust')
  const strict = options.strict ?? false
  if (typeof strict !== 'boolean') {
    // 'false' from an environment variable would mean true.
    throw optionError('strict', 'true or false', strict)
  }
  const clock = options.clock ?? systemClock
  if (!isClock(clock)) {
    // Accepted, it failed every request (a 500) instead of the boot.
    throw optionError('clock', 'a Clock (now, setTimeout and clearTimeout functions)', clock)
  }
  return {
    defaultMs,
    maxMs,
    reserveMs,
    trust,
    strict,
    observe: mode === 'observe',
    clock,
  }
}

function positive(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw optionError(name, 'a finite number of ms > 0', value)
  }
  return value
}
