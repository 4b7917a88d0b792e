import { HourglassError, hasErrorCode } from '@hourglass/core'
import type { OverLimit, RateLimitedBy } from '../types.js'
import { describeFailures, type ModelFailure } from './ModelFailure.js'

/**
 * What refused: a provider cooldown (a 429/529 it sent), or this process's
 * (or fleet's) own RPM or TPM limit for the provider (`ProviderLimits`).
 */
export type RateLimit = 'cooldown' | 'rpm' | 'tpm'

/**
 * What started the cooldown that refused: `overloaded` when it is the
 * provider-wide cooldown an overload starts (503/529: the provider's
 * capacity, every key); `request_too_large` when the request alone exceeds
 * the provider's whole TPM limit (`ProviderLimits`: no window ever admits
 * it, as the provider's own `request_too_large` answer says); else
 * `rate_limited` (a rate limit or quota on the key or model, and every other
 * RPM/TPM refusal).
 */
export type RateLimitedKind = 'rate_limited' | 'overloaded' | 'request_too_large'

export interface RateLimitedDetails {
  provider: string
  model?: string | undefined
  /** Which limit refused. Default `'cooldown'`. */
  limit?: RateLimit | undefined
  /** What started the cooldown. Default `'rate_limited'`. */
  kind?: RateLimitedKind | undefined
  /**
   * For a cooldown's refusal: the limit every rate limit that set the
   * cooldowns named, when they named the same. Default from `limit` (`tpm`:
   * tokens, `rpm`: requests), else none.
   */
  limitedBy?: RateLimitedBy | undefined
  /**
   * How long from when the error was made until a retry may succeed, in ms.
   * Infinity: never — the request alone exceeds the provider's TPM limit.
   */
  retryAfterMs: number
  /**
   * When to retry, as wall-clock epoch ms (`Date.now()` scale), so it can be
   * shown or forwarded as an HTTP `Retry-After`. Defaults to now + retryAfterMs.
   */
  retryAtMs?: number | undefined
  /** Why no attempt (or no further attempt) was made. */
  reason: string
  /** For `request_too_large`: the limit the request alone exceeds, its size and the request's, in tokens. */
  overLimit?: OverLimit | undefined
  /**
   * From `callModel`, when admission turned away every model of the list:
   * one entry per model, in the order each gave up (as `ModelUnavailableError`'s).
   * Those other than `cause` (the refusal this error repeats) are named at
   * the end of the message. Default: none.
   */
  causes?: readonly ModelFailure[] | undefined
  cause?: unknown
}

/**
 * The provider is rate-limiting and the wait does not fit: the call fails at
 * once rather than sending a request just to learn the limit still holds.
 */
export class RateLimitedError extends HourglassError {
  static override readonly errorName: string = 'RateLimitedError'
  static readonly code = 'RATE_LIMITED'
  readonly provider: string
  readonly model: string | undefined
  readonly limit: RateLimit
  /**
   * `overloaded` when the provider's overload cooldown refused (so the
   * provider is answering nobody, not limiting this caller);
   * `request_too_large` when the request alone exceeds the whole TPM limit;
   * else `rate_limited`.
   */
  readonly kind: RateLimitedKind
  /**
   * Which limit refused, as OpenAI's 429 `type` names it: `tokens` (a
   * smaller request may pass sooner) or `requests`; undefined when not
   * known (a cooldown learned from another instance, or whose 429 did not say).
   */
  readonly limitedBy: RateLimitedBy | undefined
  /** Infinity when no wait helps (the request alone exceeds the TPM limit). */
  readonly retryAfterMs: number
  readonly retryAtMs: number
  /**
   * Why nothing (or nothing more) was sent, in words, also at the end of
   * `message` (before the other models' refusals, when `causes` has them). For a refusal no wait helps (`retryAfterMs` Infinity) it names
   * the limit the request alone exceeds with both numbers — the TPM limit,
   * or this process's share of it while Redis is unavailable — which a
   * caller can pass on as it is (the gateway's 429 does).
   */
  readonly reason: string
  /**
   * For `request_too_large`: the limit the request alone exceeds (`TPM`),
   * its size and the request's, in tokens (as `NormalizedError.overLimit`
   * for a provider's own refusal). `callModel` reads it to tell whether
   * the output cap alone is over the limit — no smaller prompt helps.
   */
  readonly overLimit: OverLimit | undefined
  /**
   * From `callModel`: every model of the list and why admission turned each
   * away, in the order each gave up — this error names the one that may serve the
   * request soonest. Empty for a refusal of `Admission.acquire` itself.
   */
  readonly causes: ModelFailure[]

  constructor(details: RateLimitedDetails) {
    const retryAfterMs = Math.max(0, Math.ceil(details.retryAfterMs))
    const limit = details.limit ?? 'cooldown'
    const by = limit === 'cooldown' ? '' : ` (its ${limit.toUpperCase()} limit)`
    const when = Number.isFinite(retryAfterMs) ? `retry after ${retryAfterMs} ms` : 'no retry helps'
    const kind = details.kind ?? 'rate_limited'
    const who = `${details.provider}${details.model === undefined ? '' : `/${details.model}`}`
    const causes = [...(details.causes ?? [])]
    const others = describeFailures(causes.filter((c) => c.cause !== details.cause))
    super(
      RateLimitedError.code,
      (kind === 'overloaded'
        ? `${who} is overloaded (held back by its cooldown): ${when} (${details.reason})`
        : `rate limited by ${who}${by}: ${when} (${details.reason})`) +
        (others === '' ? '' : ` [${others}]`),
      details.cause === undefined ? undefined : { cause: details.cause },
    )
    this.provider = details.provider
    this.model = details.model
    this.limit = limit
    this.kind = kind
    this.limitedBy =
      details.limitedBy ?? (limit === 'tpm' ? 'tokens' : limit === 'rpm' ? 'requests' : undefined)
    this.retryAfterMs = retryAfterMs
    this.retryAtMs = details.retryAtMs ?? Date.now() + retryAfterMs
    this.reason = details.reason
    this.overLimit = details.overLimit
    this.causes = causes
  }
}

export function isRateLimited(error: unknown): error is RateLimitedError {
  return hasErrorCode(error, RateLimitedError.code)
}

/**
 * `error` said again with other `causes` (and `reason`, `cause`): the same
 * refusal — provider, model, limit, kind, when to come back — for the
 * errors `callModel` builds from admission's refusals.
 */
export function restatedRefusal(
  error: RateLimitedError,
  changes: { reason?: string; causes: readonly ModelFailure[]; cause: unknown },
): RateLimitedError {
  return new RateLimitedError({
    provider: error.provider,
    model: error.model,
    limit: error.limit,
    kind: error.kind,
    limitedBy: error.limitedBy,
    retryAfterMs: error.retryAfterMs,
    retryAtMs: error.retryAtMs,
    reason: changes.reason ?? error.reason,
    overLimit: error.overLimit,
    causes: changes.causes,
    cause: changes.cause,
  })
}
