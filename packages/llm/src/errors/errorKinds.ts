/**
 * What admission learns about a provider's limit from a failure of this kind:
 * `cooldown` (it is limiting: nobody sends until the wait is over), `answered`
 * (it refused the request itself, so it is answering and not limiting),
 * `retire` (the key is bad), `quota` (retire, unless the provider said when
 * the quota comes back), `unknown` (a network error, timeout or 5xx says
 * nothing about the limit — unless its status does: such a kind on a 429,
 * 503 or 529 is that limit, `limitKindOf`).
 */
export type LimitSignal = 'cooldown' | 'answered' | 'retire' | 'quota' | 'unknown'

export interface ErrorKindTraits {
  /** Transient: worth another attempt on the same model after a wait, or a fallback. */
  readonly retryable: boolean
  /**
   * Caused by the request itself: another attempt or another model gets the
   * same refusal for the same bill. Never retried, never sent to a fallback,
   * surfaced as `RequestRejectedError`; the provider's message tells the
   * client what to fix (the gateway passes it on).
   */
  readonly requestBound: boolean
  readonly limit: LimitSignal
}

/**
 * The one table of error kinds. Every failure, from any provider, maps to one
 * of these; retryability, the request-bound kinds, admission's verdict and
 * the gateway's client-fixable set are all read from here.
 */
export const ERROR_KIND_TABLE = {
  rate_limited: { retryable: true, requestBound: false, limit: 'cooldown' },
  overloaded: { retryable: true, requestBound: false, limit: 'cooldown' },
  server_error: { retryable: true, requestBound: false, limit: 'unknown' },
  timeout: { retryable: true, requestBound: false, limit: 'unknown' },
  network: { retryable: true, requestBound: false, limit: 'unknown' },
  bad_request: { retryable: false, requestBound: true, limit: 'answered' },
  auth: { retryable: false, requestBound: false, limit: 'retire' },
  content_policy: { retryable: false, requestBound: true, limit: 'answered' },
  context_too_long: { retryable: false, requestBound: true, limit: 'answered' },
  // Bigger than a limit of this provider that no wait lifts: its whole
  // per-minute limit (OpenAI's 429 "Request too large for … on tokens per
  // min"), or its HTTP body size (a 413: Anthropic's 32 MB). Never retried
  // here, and no cooldown — the limit is not holding anybody else back, so
  // the provider is answering. Not request-bound: another model or provider
  // with a larger limit takes the same request, so it goes to a fallback.
  request_too_large: { retryable: false, requestBound: false, limit: 'answered' },
  quota_exhausted: { retryable: false, requestBound: false, limit: 'quota' },
  not_found: { retryable: false, requestBound: false, limit: 'answered' },
} as const satisfies Record<string, ErrorKindTraits>

export type ErrorKind = keyof typeof ERROR_KIND_TABLE

/** Every kind, transient ones first. */
export const ERROR_KINDS = Object.keys(ERROR_KIND_TABLE) as readonly ErrorKind[]

const kindsWhere = (trait: (t: ErrorKindTraits) => boolean): ReadonlySet<ErrorKind> =>
  new Set(ERROR_KINDS.filter((kind) => trait(ERROR_KIND_TABLE[kind])))

/** The transient kinds (the default `retryable` of a normalised error). */
export const RETRYABLE_KINDS = kindsWhere((t) => t.retryable)

/** The kinds caused by the request itself (see `ErrorKindTraits.requestBound`). */
export const REQUEST_BOUND_KINDS = kindsWhere((t) => t.requestBound)

/** The traits of `kind`; an unknown string is treated as an unexplained server error. */
export function errorKindTraits(kind: string): ErrorKindTraits {
  return Object.hasOwn(ERROR_KIND_TABLE, kind)
    ? ERROR_KIND_TABLE[kind as ErrorKind]
    : ERROR_KIND_TABLE.server_error
}

/**
 * The kinds of an attempt ended on the caller's side, not by the provider:
 * `deadline_exceeded` (the call's deadline ran out) and `aborted` (the
 * caller's signal, a stream's `cancel`, a cancelled deadline). Only attempt
 * records carry them (`errorKind`), so that a count by kind sees every
 * attempt. Not in the table: no provider answers with them, and they decide
 * no retry and no cooldown — the call is over.
 */
export type StopKind = 'deadline_exceeded' | 'aborted'
