import { errorKindTraits } from '../errors/errorKinds.js'
import type { NormalizedError } from '../types.js'

/** What one provider+key looks like to this process. */
export interface Slot {
  readonly provider: string
  /**
   * Where this slot lives in the store: the provider's name, plus its
   * endpoint's id when the caller named a base URL (`openai@e1a2b3c4d5e`).
   */
  readonly scope: string
  readonly keyId: string
  /** Not before this time (the Admission clock's ms). 0 = not cooling. */
  untilMs: number
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
  /** Retired (auth failure) until this time; 0 = not retired. */
  retiredUntilMs: number
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
}

/** Orders places: the longest waiting first. */
export function byPlace(a: Place, b: Place): number {
  return a.since - b.since || a.arrival - b.arrival
}

export interface ProbeToken {
  startedAt: number
  leaseUntil: number
}

export function createSlot(provider: string, scope: string, keyId: string): Slot {
  return {
    provider,
    scope,
    keyId,
    untilMs: 0,
    halfOpen: false,
    strikes: 0,
    coolingSince: 0,
    probe: undefined,
    probeFor: undefined,
    retiredUntilMs: 0,
    reopened: 0,
    followers: [],
    wakers: new Map(),
    line: new Set(),
  }
}

export function wake(slot: Slot): void {
  // The longest waiting first: it is the first to look again (and to probe).
  const inLine = [...slot.wakers].sort((a, b) => byPlace(a[1], b[1]))
  for (const [waker] of inLine) waker()
}

/** A failure as admission needs it: a `NormalizedError` or any object with the same fields. */
export type AdmissionFailure = Pick<NormalizedError, 'kind' | 'status'> & {
  retryAfterMs?: number | undefined
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

const LIMIT_STATUSES = new Set([429, 503, 529])

export function classify(outcome: AdmissionOutcome): Verdict {
  if (outcome.ok) return 'success'
  const { kind, status, retryAfterMs } = outcome.error
  const signal = errorKindTraits(kind).limit
  if (signal === 'retire') return 'retire'
  if (signal === 'quota') return retryAfterMs === undefined ? 'retire' : 'cooldown'
  // A 429/503/529 under another kind still says the provider is limiting.
  if (signal === 'cooldown' || LIMIT_STATUSES.has(status)) return 'cooldown'
  return signal
}
