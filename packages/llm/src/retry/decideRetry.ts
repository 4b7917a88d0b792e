import { MAX_TIMER_MS } from '@hourglass/core'
import { refuseUnknownNames } from '../call/unknownOptionNames.js'
import { describeOverLimit } from '../errors/describeOverLimit.js'
import { REQUEST_BOUND_KINDS } from '../errors/errorKinds.js'
import { limitKindOf } from '../errors/limitKindOf.js'
import type { NormalizedError } from '../types.js'
import { finiteAtLeast, finiteNonNegative, nonNegative, notNaN } from './checkNumber.js'
import { DEFAULT_MAX_RETRY_AFTER_MS, hintSeconds, serverHintMs } from './maxRetryAfter.js'
import { answersBefore, describeOutlook, type ModelOutlook } from './modelOutlook.js'
import type { RetryBudget } from './RetryBudget.js'
import {
  checkRetryDelayOptions,
  computeDelay,
  type DelaySource,
  RETRY_DELAY_OPTION_NAMES,
  type RetryDelayOptions,
} from './retryDelay.js'

/** Foreground work retries overloads; background work fails at once and adds no load. */
export type Priority = 'foreground' | 'background'

export interface RetryDecisionInput extends RetryDelayOptions {
  /** The failure, as a dialect normaliser returned it. `retryable` already reflects `x-should-retry`. */
  error: NormalizedError
  /** Attempts sent to this model so far, the failed one included (from 1). */
  attempt: number
  /** Attempts per model. Default 3; clamped to 1–10. */
  maxAttempts?: number | undefined
  /** Overload errors from this model so far, this one included. Default: 1 if this one is an overload. */
  overloads?: number | undefined
  /** Retries after an overload (foreground only). Default 3; 0 = fall back on the first overload. */
  max529Retries?: number | undefined
  /** Default `'foreground'`. */
  priority?: Priority | undefined
  /** Time left before the deadline, in ms. Default `Infinity` (no deadline). */
  remainingMs?: number | undefined
  /** The least time an attempt needs to be worth sending, in ms. Default 0. */
  minAttemptMs?: number | undefined
  /**
   * The longest server-requested wait (`error.retryAfterMs`) that is waited
   * out, in ms. A failure whose server asks for longer is not retried on this
   * model (falls back, else fails, naming the wait) — unless `otherKeyFree`:
   * another key is free now, and nothing is waited. A hint within it is
   * waited with its jitter, never past it. Default 60000 (as
   * @hourglass/fetch's `retry.maxRetryAfterMs`); a finite number ≥ 0.
   */
  maxRetryAfterMs?: number | undefined
  /** Whether another model is left in the fallback list. Default false. */
  hasFallback?: boolean | undefined
  /** The provider's retry budget; when given, no retry is sent while it is drained. */
  retryBudget?: RetryBudget | undefined
  /**
   * The wait before this model may be sent to again, when it is already known
   * (admission's shared cooldown for the provider, other keys included), in
   * ms: replaces the computed delay. Default: computed by `retryDelay`.
   */
  waitMs?: number | undefined
  /**
   * Whether another key of this model's provider — not the one just refused,
   * nor one the call saw rejected — is free now: the model is as ready as
   * before the failure, so a rate limit or overload does not send the call to
   * a fallback merely expected to answer sooner (rule 10), and a wait asked
   * beyond `maxRetryAfterMs` is not weighed (rule 9); with no `waitMs`, a
   * rate limit's retry goes at once (the hint is the refused key's; a 5xx
   * or an overload, the provider's, keeps its backoff). Not the same as
   * `waitMs` 0, which a zero-length cooldown (`Retry-After: 0`, or
   * admission's `maxRetryAfterMs: 0`) gives the refused key itself. Default
   * false.
   */
  otherKeyFree?: boolean | undefined
  /** This model's recent latency percentile (p90), ms; undefined = no history. */
  latencyMs?: number | undefined
  /**
   * The remaining model expected to answer first (with `hasFallback`). After
   * a rate limit or an overload, when it is expected to answer before this
   * model's wait plus latency, the call falls back at once. Default: none
   * (a fallback only when this model's attempts run out).
   */
  fallback?: ModelOutlook | undefined
}

/**
 * Which rule refused a retry, for events and metrics (low cardinality): the
 * llm attempt message's `why`.
 */
export type RetrySkipWhy =
  | 'no-budget'
  | 'not-retryable'
  | 'background'
  | 'max-overloads'
  | 'max-attempts'
  | 'retry-budget'
  | 'retry-after-too-long'
  | 'fallback-sooner'
  | 'keys-retired'

export type RetryDecision =
  | { action: 'retry'; delayMs: number; delaySource: DelaySource; reason: string }
  | { action: 'fallback'; reason: string; why: RetrySkipWhy; waitMs?: number | undefined }
  | { action: 'fail'; reason: string; why: RetrySkipWhy; waitMs?: number | undefined }

/** Upper bound on `maxAttempts`: beyond it a "retry" is a load generator. */
export const MAX_ATTEMPTS_CAP = 10

/**
 * What to do after a failed attempt: retry this model after a wait, fall back
 * to the next model now, or fail now — always with a reason a log line can
 * carry. Pure: the same input gives the same answer (inject `random`).
 *
 * Rules, first match wins:
 * 1. no time left for another attempt → fail;
 * 2. bad request, content policy, context too long → fail (never retried,
 *    never sent to another model);
 * 3. the request alone is bigger than this model's whole limit
 *    (`request_too_large`) → fall back, else fail, naming the limit and the
 *    request's size: never retried here (no wait lifts it, whatever
 *    `x-should-retry` says), but a model with a larger limit takes it;
 * 4. not retryable (auth, quota exhausted, not found, or the server said
 *    `x-should-retry: false`) → fall back, else fail;
 * 5. overload (`overloaded`, or a 503/529 labelled a server error) with
 *    `priority: 'background'` → fail at once;
 * 6. more overloads than `max529Retries` → fall back, else fail;
 * 7. `maxAttempts` reached → fall back, else fail;
 * 8. retry budget drained → fall back, else fail;
 * 9. the server asked for a wait longer than `maxRetryAfterMs` (60 s by
 *    default), and no other key is free now (`otherKeyFree`) → not slept: fall
 *    back, else fail, naming the wait — with or without a deadline;
 * 10. a rate limit or overload (`limitKindOf`: the kind, or a 429/503/529
 *    labelled a server error), unless another key is free now
 *    (`otherKeyFree`), and `fallback` is expected to answer before this
 *    model's wait plus its latency (`latencyMs`), by a whole ms at least
 *    (`answersBefore`) → fall back now: the earliest answer wins (no
 *    history counts as answering at once);
 * 11. the wait (`waitMs`, else `retryDelay`) plus `minAttemptMs` does not fit
 *    in `remainingMs`, or the wait leaves no time at all → not slept: fall
 *    back, else fail, naming the wait;
 * 12. otherwise retry after the wait.
 *
 * Numbers are checked first (`checkDecisionInput`): NaN is never given a
 * meaning — it would retry an overload for ever or sleep a NaN wait as 0.
 */
export function decideRetry(input: RetryDecisionInput): RetryDecision {
  checkDecisionInput(input)
  const { error } = input
  const remainingMs = input.remainingMs ?? Number.POSITIVE_INFINITY
  const minAttemptMs = Math.max(0, input.minAttemptMs ?? 0)
  const maxAttempts = clampAttempts(input.maxAttempts)
  const max529Retries = Math.max(0, input.max529Retries ?? 3)
  // Rate limit or overload: the same test admission applies (a 503 labelled
  // `server_error` is an overload to both).
  const limit = limitKindOf(error)
  const overloaded = limit === 'overloaded'
  const overloads = input.overloads ?? (overloaded ? 1 : 0)
  const what = `${limit ?? error.kind} (HTTP ${error.status}${error.providerCode === undefined ? '' : `, ${error.providerCode}`})`
  // A plain `bad_request` the server marked `x-should-retry: true` (the
  // dialect leaves it retryable: a 409 the provider expects to clear) is
  // retried on this model, as the README says; like every request-bound
  // kind it goes to no fallback, and any other request-bound error is
  // permanent for this request. Read as request-bound first, its retry was
  // never made: the call ended at once with RequestRejectedError, its cause
  // saying `retryable: true`.
  const requestBound = REQUEST_BOUND_KINDS.has(error.kind)
  const giveUp = (why: RetrySkipWhy, reason: string, waitMs?: number): RetryDecision => {
    const base =
      input.hasFallback === true && !requestBound
        ? { action: 'fallback' as const, reason, why }
        : { action: 'fail' as const, reason, why }
    return waitMs === undefined ? base : { ...base, waitMs }
  }

  // Without a deadline (Infinity) any attempt fits: Infinity <= Infinity
  // refused every retry of a call whose `minAttemptMs` is Infinity, where
  // admission (the same rule) let its next call wait and go.
  if (remainingMs !== Number.POSITIVE_INFINITY && remainingMs <= minAttemptMs) {
    return {
      action: 'fail',
      reason: `${what}; ${fmt(remainingMs)} ms left, too little for another attempt`,
      why: 'no-budget',
    }
  }
  if (requestBound && !(error.kind === 'bad_request' && error.retryable)) {
    return {
      action: 'fail',
      reason: `${what} is permanent for this request: never retried`,
      why: 'not-retryable',
    }
  }
  if (error.kind === 'request_too_large') {
    return giveUp(
      'not-retryable',
      `${what}: ${describeOverLimit(error.overLimit, 'this model')}; no wait lifts it: not retried on this model`,
    )
  }
  if (!error.retryable) {
    return giveUp('not-retryable', `${what} is not retryable`)
  }
  if (overloaded && input.priority === 'background') {
    return {
      action: 'fail',
      reason: `${what}: background work fails at once on overload`,
      why: 'background',
    }
  }
  if (overloaded && overloads > max529Retries) {
    return giveUp(
      'max-overloads',
      `${what}: ${overloads} overload(s), more than max529Retries (${max529Retries})`,
    )
  }
  if (input.attempt >= maxAttempts) {
    return giveUp(
      'max-attempts',
      `${what}: attempts exhausted (${input.attempt} of ${maxAttempts})`,
    )
  }
  if (input.retryBudget !== undefined && !input.retryBudget.canRetry()) {
    const tokens = input.retryBudget.tokens.toFixed(1)
    return giveUp(
      'retry-budget',
      `${what}: provider retry budget drained (${tokens} of ${input.retryBudget.maxTokens} tokens)`,
    )
  }
  const computed = computeDelay(input)
  const { source } = computed
  const known = input.waitMs
  const maxRetryAfterMs = input.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS
  const hint = serverHintMs(error.retryAfterMs)
  // Before the deadline check: without a deadline every wait "fits", and a
  // `Retry-After: 86400` was slept for a day (the timer holding the process
  // open). A server asking for that long means "not now"; the call moves on
  // and admission's capped cooldown lets one probe find out when it is over.
  // With another key free now nothing is waited on the hint. Its own input,
  // not a known wait of 0: a cooldown capped at 0 ms (admission's
  // `maxRetryAfterMs: 0`) leaves the refused key itself free, and the only
  // key was sent a request refused for a day until attempts ran out.
  if (hint !== undefined && hint > maxRetryAfterMs && input.otherKeyFree !== true) {
    const asked = Math.min(hint, MAX_TIMER_MS)
    return giveUp(
      'retry-after-too-long',
      `${what}: the provider asked for ${hintSeconds(asked)}, beyond maxRetryAfterMs (${maxRetryAfterMs} ms); not slept`,
      asked,
    )
  }
  // A known wait of Infinity (every key retired) never fits: given up below.
  // After a rate limit with another key free now and no known wait, none:
  // the hint and the backoff are the refused key's (a day's hint, let
  // through by rule 9 above for the free key, was the retry's delay). Not
  // after a 5xx or an overload, the provider's own, whatever key is free:
  // its backoff (the overload floor) stands. A hint within the cap keeps
  // its jitter, but not past the cap.
  const delayMs =
    known !== undefined
      ? Math.ceil(known)
      : input.otherKeyFree === true && limit === 'rate_limited'
        ? 0
        : hint !== undefined && source === 'server'
          ? Math.max(Math.ceil(hint), Math.min(computed.delayMs, maxRetryAfterMs))
          : computed.delayMs
  // Not when another key of the provider is free now: the model is as ready
  // as before the failure, and a ready model is not left for one merely
  // expected to be quicker — a fallback without latency history "answers at
  // once", so a 429 on one key sent every such call to the fallback model,
  // the primary's free key unused. Its own input, not a known wait of 0: a
  // zero-length cooldown (`Retry-After: 0`) leaves the refused key granted
  // as a probe, and the only key was sent to again until attempts ran out.
  if (
    limit !== undefined &&
    input.otherKeyFree !== true &&
    input.hasFallback === true &&
    input.fallback !== undefined
  ) {
    const here: ModelOutlook = { label: 'this model', waitMs: delayMs, latencyMs: input.latencyMs }
    if (answersBefore(input.fallback, here)) {
      return giveUp(
        'fallback-sooner',
        `${what}: ${describeOutlook(input.fallback)} is expected to answer before ${describeOutlook(here)}; falling back now`,
        delayMs,
      )
    }
  }
  if (!Number.isFinite(delayMs)) {
    return giveUp(
      'keys-retired',
      `${what}: this model cannot be sent to again (every key retired); not slept`,
    )
  }
  // A wait that ends at the deadline (or past what the attempt needs) is
  // not slept: with `minAttemptMs` 0, a backoff of exactly the time left was
  // slept to the end and the call failed by its deadline — its record said
  // `retry`, no retry went out, and a fallback that could have answered
  // was never asked.
  if (delayMs + minAttemptMs > remainingMs || delayMs >= remainingMs) {
    const label = source === 'server' ? 'server-requested wait' : `${source} wait`
    // A wait that fits the time left but not with `minAttemptMs` after it:
    // named, or the reason read as a wait longer than the time left.
    const why =
      delayMs < remainingMs
        ? `leaves ${fmt(remainingMs - delayMs)} ms of the ${fmt(remainingMs)} ms left, less than retry.minAttemptMs (${fmt(minAttemptMs)} ms)`
        : `does not fit in the ${fmt(remainingMs)} ms left`
    return giveUp('no-budget', `${what}: ${label} of ${delayMs} ms ${why}; not slept`, delayMs)
  }
  return {
    action: 'retry',
    delayMs,
    delaySource: source,
    reason: `${what}: retry ${input.attempt + 1} of ${maxAttempts} after ${delayMs} ms (${source})`,
  }
}

/**
 * Refuses what no rule can decide on, naming it (`RangeError`; `TypeError`
 * for no number): NaN anywhere; negative counts and times; an infinite
 * `attempt`, `overloads`, latency, delay option or `maxRetryAfterMs`. Infinity keeps its
 * meaning where it has one: `remainingMs` (no deadline), `maxAttempts`
 * (clamped to 10), `max529Retries` (no cap but `maxAttempts`),
 * `minAttemptMs` (under a deadline no attempt ever fits: fail; without one
 * any attempt fits), `waitMs` (never: given up).
 */
function checkDecisionInput(input: RetryDecisionInput): void {
  const where = 'decideRetry'
  if (typeof input !== 'object' || input === null || typeof input.error !== 'object') {
    throw new TypeError(`${where}: input must be an object with an error`)
  }
  // Ignored, a misspelt input decided by its default: `maxAttempt: 2`
  // retried a third time, `remainingTimeMs` slept as if no deadline.
  refuseUnknownNames(input, DECISION_INPUT_NAMES, 'decideRetry()')
  checkRetryDelayOptions(where, input)
  finiteAtLeast(where, 'attempt', input.attempt, 0)
  notNaN(where, 'maxAttempts', input.maxAttempts)
  nonNegative(where, 'max529Retries', input.max529Retries)
  finiteNonNegative(where, 'overloads', input.overloads)
  notNaN(where, 'remainingMs', input.remainingMs)
  nonNegative(where, 'minAttemptMs', input.minAttemptMs)
  // Finite, as in @hourglass/fetch: Infinity would bring back the day-long sleep.
  finiteNonNegative(where, 'maxRetryAfterMs', input.maxRetryAfterMs)
  nonNegative(where, 'waitMs', input.waitMs)
  finiteNonNegative(where, 'latencyMs', input.latencyMs)
  if (input.fallback !== undefined) {
    nonNegative(where, 'fallback.waitMs', input.fallback.waitMs)
    finiteNonNegative(where, 'fallback.latencyMs', input.fallback.latencyMs)
  }
}

/** Every name `decideRetry` reads (the type checker keeps the list whole). */
const DECISION_INPUT_NAMES: ReadonlySet<string> = new Set([
  ...RETRY_DELAY_OPTION_NAMES,
  ...Object.keys({
    error: true,
    attempt: true,
    maxAttempts: true,
    overloads: true,
    max529Retries: true,
    priority: true,
    remainingMs: true,
    minAttemptMs: true,
    maxRetryAfterMs: true,
    hasFallback: true,
    retryBudget: true,
    waitMs: true,
    otherKeyFree: true,
    latencyMs: true,
    fallback: true,
  } satisfies Record<Exclude<keyof RetryDecisionInput, keyof RetryDelayOptions>, true>),
])

/** `maxAttempts` as used: a whole number in 1–10, default 3. */
export function clampAttempts(maxAttempts: number | undefined): number {
  if (maxAttempts === undefined || Number.isNaN(maxAttempts)) return 3
  return Math.min(MAX_ATTEMPTS_CAP, Math.max(1, Math.floor(maxAttempts)))
}

function fmt(ms: number): string {
  return Number.isFinite(ms) ? String(Math.max(0, Math.floor(ms))) : 'unlimited'
}
