import { MAX_TIMER_MS } from '@hourglass/core'
import { refuseUnknownNames } from '../call/unknownOptionNames.js'
import { limitKindOf } from '../errors/limitKindOf.js'
import type { NormalizedError } from '../types.js'
import { finiteAtLeast, finiteNonNegative } from './checkNumber.js'

/** A source of uniform random numbers in [0, 1). Inject one to make waits reproducible. */
export type RandomSource = () => number

export interface RetryDelayOptions {
  /** Backoff for attempt 1, in ms; doubles per attempt. Default 1000. */
  baseDelayMs?: number | undefined
  /** Cap on the backoff before jitter, in ms. Default 20000. */
  maxDelayMs?: number | undefined
  /** Jitter added to the backoff, as a share of it: 0.3 = up to +30 %. Default 0.3; 0 = none. */
  jitterRatio?: number | undefined
  /** Shortest wait after an overload with no server hint, in ms. Default 5000. */
  overloadFloorMs?: number | undefined
  /** Random extra on top of the overload floor, up to this many ms. Default 5000. */
  overloadJitterMs?: number | undefined
  /**
   * Extra added to a server's own wait hint, as a share of it: 0.1 = up to
   * +10 %. Default 0.1; 0 = honour the hint to the millisecond. Callers that
   * all got the same `Retry-After` would otherwise come back in one burst;
   * waiting a little longer than asked is always allowed.
   */
  hintJitterRatio?: number | undefined
  /** Uniform random in [0, 1). Default `Math.random`. */
  random?: RandomSource | undefined
}

export interface RetryDelayInput extends RetryDelayOptions {
  /** The attempt that just failed, counting from 1. */
  attempt: number
  /**
   * Its normalised error. `retryAfterMs` already holds any server hint
   * (headers or body). `status`, when given, counts as the dialects count it:
   * a 503 or 529 labelled a server error is an overload (`limitKindOf`).
   */
  error: Pick<NormalizedError, 'kind' | 'retryAfterMs'> & { status?: number | undefined }
}

/** Where a wait came from, for logs and for the reason given when it does not fit. */
export type DelaySource = 'server' | 'overload' | 'backoff'

export interface RetryDelay {
  delayMs: number
  source: DelaySource
}

export const RETRY_DELAY_DEFAULTS = {
  baseDelayMs: 1000,
  maxDelayMs: 20_000,
  jitterRatio: 0.3,
  overloadFloorMs: 5000,
  overloadJitterMs: 5000,
  hintJitterRatio: 0.1,
} as const

/**
 * How long to wait before retrying, in ms:
 *
 * 1. the server's hint (`retry-after-ms`, `Retry-After`, rate-limit reset
 *    headers, Gemini `retryDelay` — dialects fold them into `retryAfterMs`),
 *    plus up to `hintJitterRatio` of it;
 * 2. else, on overload (`overloaded`, or a 503/529 labelled a server error:
 *    `limitKindOf`): `overloadFloorMs + random × overloadJitterMs` — a
 *    crowded cluster needs longer than a backoff step;
 * 3. else `min(baseDelayMs × 2^(attempt−1), maxDelayMs)` plus
 *    `random × jitterRatio` of it, so clients sharing an account spread out.
 *
 * The options and `attempt` must be finite numbers ≥ 0 (a `RangeError`
 * naming the option otherwise, a `TypeError` for no number): a NaN would
 * come out as a NaN wait. The server's hint is untrusted and clamped
 * instead: NaN or negative is no hint, anything longer than `MAX_TIMER_MS`
 * (~24.8 days, Infinity included) is `MAX_TIMER_MS`. That is the wait the
 * server asked for, not one anyone sleeps: `decideRetry` (and so
 * `callModel`) does not retry on a hint longer than `maxRetryAfterMs` (60 s
 * by default), deadline or not.
 */
export function retryDelay(input: RetryDelayInput): RetryDelay {
  // Ignored, a misspelt option (`baseDelay: 10`) left its default in force.
  refuseUnknownNames(input, RETRY_DELAY_INPUT_NAMES, 'retryDelay()')
  checkRetryDelayOptions('retryDelay', input)
  finiteAtLeast('retryDelay', 'attempt', input.attempt, 0)
  return computeDelay(input)
}

/** Every delay option (the type checker keeps the list whole). */
export const RETRY_DELAY_OPTION_NAMES: readonly string[] = Object.keys({
  baseDelayMs: true,
  maxDelayMs: true,
  jitterRatio: true,
  overloadFloorMs: true,
  overloadJitterMs: true,
  hintJitterRatio: true,
  random: true,
} satisfies Record<keyof RetryDelayOptions, true>)

/** Every name `retryDelay` reads. */
const RETRY_DELAY_INPUT_NAMES: ReadonlySet<string> = new Set([
  ...RETRY_DELAY_OPTION_NAMES,
  ...Object.keys({ attempt: true, error: true } satisfies Record<
    Exclude<keyof RetryDelayInput, keyof RetryDelayOptions>,
    true
  >),
])

/** Refuses delay options that are not finite numbers ≥ 0, naming the first such (`where`: the caller). */
export function checkRetryDelayOptions(where: string, options: RetryDelayOptions): void {
  finiteNonNegative(where, 'baseDelayMs', options.baseDelayMs)
  finiteNonNegative(where, 'maxDelayMs', options.maxDelayMs)
  finiteNonNegative(where, 'jitterRatio', options.jitterRatio)
  finiteNonNegative(where, 'overloadFloorMs', options.overloadFloorMs)
  finiteNonNegative(where, 'overloadJitterMs', options.overloadJitterMs)
  finiteNonNegative(where, 'hintJitterRatio', options.hintJitterRatio)
  if (options.random !== undefined && typeof options.random !== 'function') {
    throw new TypeError(
      `${where}: random must be a function returning [0, 1), got a ${typeof options.random}`,
    )
  }
}

/** `retryDelay` once its input is checked. */
export function computeDelay(input: RetryDelayInput): RetryDelay {
  const random = input.random ?? Math.random
  const hint = input.error.retryAfterMs
  if (typeof hint === 'number' && hint >= 0) {
    const ratio = input.hintJitterRatio ?? RETRY_DELAY_DEFAULTS.hintJitterRatio
    const asked = Math.min(hint, MAX_TIMER_MS)
    const delayMs = Math.min(Math.ceil(asked * (1 + ratio * unit(random))), MAX_TIMER_MS)
    return { delayMs, source: 'server' }
  }
  if (limitKindOf(input.error) === 'overloaded') {
    const floor = input.overloadFloorMs ?? RETRY_DELAY_DEFAULTS.overloadFloorMs
    const spread = input.overloadJitterMs ?? RETRY_DELAY_DEFAULTS.overloadJitterMs
    return { delayMs: Math.round(floor + unit(random) * spread), source: 'overload' }
  }
  return { delayMs: Math.round(backoffMs(input) * (1 + jitter(input, random))), source: 'backoff' }
}

/** The backoff before jitter for `attempt` (from 1), in ms. */
export function backoffMs(input: {
  attempt: number
  baseDelayMs?: number | undefined
  maxDelayMs?: number | undefined
}): number {
  const base = input.baseDelayMs ?? RETRY_DELAY_DEFAULTS.baseDelayMs
  const max = input.maxDelayMs ?? RETRY_DELAY_DEFAULTS.maxDelayMs
  // No backoff doubles to none: past attempt 1024, 2^exponent is Infinity,
  // and 0 × Infinity made the wait NaN (a timer of NaN fires at once, and
  // every comparison with it is false), which no checked option allows.
  if (base === 0) return 0
  const exponent = Math.max(0, Math.floor(input.attempt) - 1)
  // 2^exponent overflows to Infinity for large attempts; min() keeps it at the cap.
  return Math.min(base * 2 ** exponent, max)
}

function jitter(input: RetryDelayOptions, random: RandomSource): number {
  return (input.jitterRatio ?? RETRY_DELAY_DEFAULTS.jitterRatio) * unit(random)
}

/** Clamps a random source's output into [0, 1) so a bad source cannot produce negative waits. */
function unit(random: RandomSource): number {
  const value = random()
  return Number.isFinite(value) ? Math.min(Math.max(value, 0), 1) : 0
}
