import { errorKindTraits } from '../errors/errorKinds.js'
import { limitKindOf } from '../errors/limitKindOf.js'
import { serverHintMs } from '../retry/maxRetryAfter.js'
import type { CooldownScope, NormalizedError, RateLimitedBy } from '../types.js'

/**
 * What one cooldown holds back, as this process sees it: a model on a key
 * (`level: 'model'`), a key (every model of it), or the provider at its
 * endpoint (every key). A request goes through a lane of them (`Lane`).
 */
export interface Slot {
  readonly provider: string
  readonly level: CooldownScope
  /** The model, for a `model` slot. */
  readonly model: string | undefined
  /**
   * Its name in the store, within `scope`: the key id (`kab12…`, `-` without
   * a key) for a key slot — the name every version used — then
   * `<keyId>:<model>` for a model slot and `*` for the provider's.
   */
  readonly storeId: string
  /**
   * Where this slot lives in the store: the provider's name, plus its
   * endpoint's id when the caller named a base URL (`openai@e1a2b3c4d5e`).
   */
  readonly scope: string
  readonly keyId: string
  /** Not before this time (the Admission clock's ms). 0 = not cooling. */
  untilMs: number
  /**
   * Until when a server's own wait (`Retry-After`, reset headers, Gemini's
   * `retryDelay`) holds this cooldown, as admission kept it (capped at its
   * `maxRetryAfterMs`), on the Admission clock; 0 = none. A caller that takes
   * such waits only up to its own `maxRetryAfterMs` is refused while this is
   * further away — not for a backoff or an overload's wait, nobody's request.
   */
  serverUntilMs: number
  /** A cooldown was seen and no answer has come back since: the next call is a probe. */
  halfOpen: boolean
  /** Consecutive limit failures since the last answer (drives the backoff). */
  strikes: number
  /** When the current cooldown began (the Admission clock's ms); requests sent before it report late. */
  coolingSince: number
  /** The probe in flight, if any; its lease ends when its deadline would. */
  probe: ProbeToken | undefined
  /** The waiter the next probe is kept for (the longest waiting). */
  probeFor: Place | undefined
  /** Retired (auth failure, or a quota gone for good) until this time; 0 = not retired. */
  retiredUntilMs: number
  /** The error kind that retired it (`auth`, `quota_exhausted`): what `KeysRetiredError` reports. */
  retiredFor: string | undefined
  /**
   * Which limit the rate limit that set this cooldown's end named, when it
   * did; undefined for any other cooldown, and once the store shows an end
   * later than any this process set or wrote (another instance's, whose
   * cause is not stored).
   */
  limitedBy: RateLimitedBy | undefined
  /**
   * Whether the failure that set this cooldown's end was an overload: a
   * model- or key-scoped overload (an upstream that routes per model, such
   * as another gateway, says so) is still refused as `overloaded`.
   */
  overloaded: boolean
  /** The latest end this process's writes to the store can have (the Admission clock's ms); 0 = none. */
  ownStoreUntilMs: number
  /** Bumped each time an answer closes a half-open slot: waiters see they were released. */
  reopened: number
  /**
   * The places of the waiters released by the last reopening, in order:
   * they follow in the order they came, spread over `staggerMs`.
   */
  followers: Place[]
  /** Waiters to wake when anything here changes, each with its place in line. */
  wakers: Map<() => void, Place>
  /** Every caller in `acquire` for this slot (waiting, or looking again). */
  line: Set<Place>
}

/** A caller's place in the line of a slot: who has waited longest (`since`), then who asked first. */
export interface Place {
  since: number
  arrival: number
  /**
   * The lanes the caller may go through: whether it can take a probe now
   * (`mayProbe`), or is held by another of its slots. None: taken as able.
   */
  lanes?: readonly Lane[] | undefined
  /** Waiting for a `ProviderLimits` window's reset: it cannot take a probe now (`mayProbe`). */
  waitingForWindow?: boolean | undefined
}

/** Orders places: the longest waiting first. */
export function byPlace(a: Place, b: Place): number {
  return a.since - b.since || a.arrival - b.arrival
}

export interface ProbeToken {
  startedAt: number
  leaseUntil: number
}

/**
 * The slots one request on one key goes through, the key's slot first, then
 * the model's (when a model is named), then the provider's: it may go when
 * none of them is cooling.
 */
export type Lane = readonly Slot[]

/** The store name of the provider-wide slot. */
export const PROVIDER_SLOT_ID = '*'

export function createSlot(
  provider: string,
  scope: string,
  keyId: string,
  level: CooldownScope = 'key',
  model?: string | undefined,
): Slot {
  return {
    provider,
    level,
    model,
    storeId:
      level === 'provider' ? PROVIDER_SLOT_ID : level === 'model' ? `${keyId}:${model}` : keyId,
    scope,
    keyId,
    untilMs: 0,
    serverUntilMs: 0,
    halfOpen: false,
    strikes: 0,
    coolingSince: 0,
    probe: undefined,
    probeFor: undefined,
    retiredUntilMs: 0,
    retiredFor: undefined,
    limitedBy: undefined,
    overloaded: false,
    ownStoreUntilMs: 0,
    reopened: 0,
    followers: [],
    wakers: new Map(),
    line: new Set(),
  }
}

/**
 * How much of `lane`'s wait from `now` a server asked for (`serverUntilMs`),
 * in ms: the latest end of its slots' server-started holds, within their
 * cooldowns (one a store later extended still ends there). 0 = none.
 */
export function serverWaitMs(lane: Lane, now: number): number {
  let ms = 0
  for (const slot of lane) ms = Math.max(ms, Math.min(slot.serverUntilMs, slot.untilMs) - now)
  return ms
}

export function wake(slot: Slot): void {
  // The longest waiting first: it is the first to look again (and to probe).
  const inLine = [...slot.wakers].sort((a, b) => byPlace(a[1], b[1]))
  for (const [waker] of inLine) waker()
}

/** A failure as admission needs it: a `NormalizedError` or any object with the same fields. */
export type AdmissionFailure = Pick<NormalizedError, 'kind' | 'status'> & {
  retryAfterMs?: number | undefined
  /** What the cooldown holds back; default by kind (`cooldownScopeOf`). */
  scope?: CooldownScope | undefined
  /** `day`: a spent per-day quota, whose `retryAfterMs` is the day, not a server hint. */
  quotaWindow?: 'day' | undefined
  /** For a rate limit: which limit the provider said it was (`NormalizedError.limitedBy`). */
  limitedBy?: RateLimitedBy | undefined
}

/**
 * What a limit's cooldown holds back. The provider's word first (`scope`);
 * else an overload (`limitKindOf`: `overloaded`, or a 503/529 labelled a
 * server error) is the provider's — its capacity at that endpoint, whoever's
 * key; a rate limit (`rate_limited`, or a 429 so labelled) is the model's on
 * that key — OpenAI, Anthropic and Gemini count requests and tokens per model
 * (or model family) within an organisation, so another model on the key may
 * still answer; anything else (a quota: billing, credit) is the key's — every
 * model on it.
 */
export function cooldownScopeOf(error: AdmissionFailure): CooldownScope {
  if (error.scope === 'model' || error.scope === 'key' || error.scope === 'provider') {
    return error.scope
  }
  const limit = limitKindOf(error)
  if (limit === 'overloaded') return 'provider'
  if (limit === 'rate_limited') return 'model'
  return 'key'
}

/**
 * What came of a request sent under a permit. A limit without a server wait
 * cools for `cooldownMs` when the reporter names its own (a caller's
 * `retryDelay`), else for the Admission's `cooldownMs` option.
 */
export type AdmissionOutcome =
  | { ok: true; latencyMs?: number | undefined }
  | {
      ok: false
      error: AdmissionFailure
      latencyMs?: number | undefined
      cooldownMs?: number | undefined
    }

/**
 * - `success`: answered; the limit is not holding.
 * - `answered`: the provider refused the request itself (400, policy…) — it is
 *   answering, so it is not limiting us either.
 * - `cooldown`: a rate limit or overload: nobody sends until the wait is over.
 * - `retire`: the key is bad (auth) or out of quota for good.
 * - `unknown`: a network error, timeout or 5xx: says nothing about the limit.
 */
export type Verdict = 'success' | 'answered' | 'cooldown' | 'retire' | 'unknown'

export function classify(outcome: AdmissionOutcome): Verdict {
  if (outcome.ok) return 'success'
  const { kind, retryAfterMs } = outcome.error
  const signal = errorKindTraits(kind).limit
  if (signal === 'retire') return 'retire'
  // A wait that is no wait (NaN, a negative: `serverHintMs`, as the cooldown
  // reads it) is none: read as one, a quota gone for good was cooled for a
  // backoff step and probed again, a request spent on it, without end.
  if (signal === 'quota') return serverHintMs(retryAfterMs) === undefined ? 'retire' : 'cooldown'
  // The retry path's own test: a 429/503/529 labelled a server error is a
  // limit to both, and a refusal of the request on such a status to neither.
  if (limitKindOf(outcome.error) !== undefined) return 'cooldown'
  return signal
}
