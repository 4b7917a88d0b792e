import { retryDelay } from '../retry/retryDelay.js'
import type { ErrorKind } from '../types.js'

/** What a cooldown without a server hint is computed from. */
export interface CooldownInput {
  kind: ErrorKind
  status: number
  /** Consecutive limit failures of this provider+key, this one included (1 for the first). */
  strikes: number
}

/**
 * The wait used when the provider gave no hint (no `Retry-After`, no reset
 * header, no `retryDelay`): the policy's own `retryDelay` with the strike
 * count as the attempt — `min(1000·2^(strikes−1), 20000)` ms plus up to 30 %
 * jitter, or for an overload (`overloaded`, or a 503/529 labelled a server
 * error: `limitKindOf`) 5000 ms plus up to 5000 ms, since a cluster under
 * load recovers slower than a quota window.
 */
export function defaultCooldownMs(
  input: CooldownInput,
  random: () => number = Math.random,
): number {
  // `retryDelay` reads the kind and the status with `limitKindOf`, as the call's own wait does.
  return retryDelay({
    attempt: Math.max(1, input.strikes),
    error: { kind: input.kind, status: input.status },
    random,
  }).delayMs
}
