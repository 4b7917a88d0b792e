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
  /**
   * Done without an outcome to report (not sent after all, or cancelled in
   * flight): frees the probe slot at once. `{ sent: false }` says nothing
   * reached the provider: what the request took of the RPM/TPM limits goes
   * back to the window that took it (kept, requests refused after admission
   * — by a cost budget — used up the limit that sent ones needed). Without
   * it the share stays counted: the provider may have counted the request.
   */
  release(options?: { sent?: boolean | undefined }): void
}

/**
 * A permit bound to its lane (key, model, provider slots): reports once (a success's latency counts for
 * `model` too, when given), and a probe that is released frees the slot at once (one
 * released as not sent gives its limits' share back too).
 */
export function createPermit(
  book: CooldownBook,
  clock: Clock,
  lane: Lane,
  key: string | undefined,
  token: ProbeToken | undefined,
  waitedMs: number,
  model?: string | undefined,
  /** Gives back what the request took of `ProviderLimits` (none without limits); never rejects. */
  giveBack?: (() => Promise<void>) | undefined,
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
    release(options?: { sent?: boolean | undefined }): void {
      if (settled) return
      settled = true
      // Not awaited: on Redis it is a round trip the caller, which sends
      // nothing, has no reason to wait for.
      if (options?.sent === false) void giveBack?.().catch(noop)
      for (const held of lane) {
        if (token && held.probe === token) {
          held.probe = undefined
          wake(held)
        }
      }
    },
  }
}

function noop(): void {}
