import { ManualClock } from '@hourglass/core'
import { Admission } from '../../../src/admission/Admission.js'
import { ProviderLimits } from '../../../src/admission/ProviderLimits.js'

/**
 * Admission with a `tpm`-token TPM limit (1000 unless given) for `openai`, on a manual clock:
 * nothing waits for real time, and the window resets 60 s on (past any
 * deadline these tests give).
 */
export function tpmLimited(tpm = 1000): { clock: ManualClock; admission: Admission } {
  return manualAdmission(
    new ProviderLimits({ limits: { openai: { tpm } }, logger: { warn: () => {} } }),
  )
}

/** Admission, its limits (if any) and deadlines on one manual clock: nothing waits for real time. */
export function manualAdmission(limits?: ProviderLimits): {
  clock: ManualClock
  admission: Admission
} {
  const clock = new ManualClock(1_000)
  const admission = new Admission({
    clock,
    wallClock: () => clock.now(),
    defaultNeededMs: 0,
    logger: { warn: () => {} },
    ...(limits === undefined ? {} : { limits }),
  })
  return { clock, admission }
}

/** `collapse` and `compact` that change nothing and record each call in `shrinks`, by name. */
export function recordingReducers(shrinks: string[]): {
  collapse: <T>(messages: T) => T
  compact: <T>(messages: T) => T
} {
  return {
    collapse: (messages) => {
      shrinks.push('collapse')
      return messages
    },
    compact: (messages) => {
      shrinks.push('compact')
      return messages
    },
  }
}
