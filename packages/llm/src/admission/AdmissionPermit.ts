import type { Clock } from '@hourglass/core'
import type { CooldownBook } from './CooldownBook.js'
import { type AdmissionOutcome, type Lane, type ProbeToken, type Slot, wake } from './slot.js'

/** Leave to send one request with `key`. Report what came of it (or release it if not sent). */
export interface AdmissionPermit {
  readonly provider: string
  /** The key to send with (undefined when the request had no keys). */
  readonly key: string | undefined
  readonly keyId: string
  /** This request is the half-open probe: the others wait for its outcome. */
  readonly probe: boolean
  /** Time spent waiting for admission, in ms. */
  readonly waitedMs: number
  /** Feed the outcome back; latency defaults to the time since the permit was granted. */
  report(outcome: AdmissionOutcome): Promise<void>
  /** The request was not sent after all: free the probe slot at once. */
  release(): void
}

/**
 * A permit bound to its lane (key, model, provider slots): reports once (a success's latency counts for
 * `model` too, when given), and a probe that is released frees the slot at once.
 */
export function createPermit(
  book: CooldownBook,
  clock: Clock,
  lane: Lane,
  key: string | undefined,
  token: ProbeToken | undefined,
  waitedMs: number,
  model?: string | undefined,
): AdmissionPermit {
  const grantedAt = clock.now()
  const slot = lane[0] as Slot
  let settled = false
  return {
    provider: slot.provider,
    key,
    keyId: slot.keyId,
    probe: token !== undefined,
    waitedMs,
    report(outcome: AdmissionOutcome): Promise<void> {
      if (settled) return Promise.resolve()
      settled = true
      return book.apply(
        lane,
        outcome,
        token,
        outcome.latencyMs ?? clock.now() - grantedAt,
        model,
        grantedAt,
      )
    },
    release(): void {
      if (settled) return
      settled = true
      for (const held of lane) {
        if (token && held.probe === token) {
          held.probe = undefined
          wake(held)
        }
      }
    },
  }
}
