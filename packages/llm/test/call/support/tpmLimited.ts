import { ManualClock } from '@hourglass/core'
import { Admission } from '../../../src/admission/Admission.js'
import { ProviderLimits } from '../../../src/admission/ProviderLimits.js'

/**
 * Admission with a 1000-token TPM limit for `openai`, on a manual clock:
 * nothing waits for real time, and the window resets 60 s on (past any
 * deadline these tests give).
 */
export function tpmLimited(): { clock: ManualClock; admission: Admission } {
  const clock = new ManualClock(1_000)
  const admission = new Admission({
    clock,
    wallClock: () => clock.now(),
    defaultNeededMs: 0,
    logger: { warn: () => {} },
    limits: new ProviderLimits({ limits: { openai: { tpm: 1000 } }, logger: { warn: () => {} } }),
  })
  return { clock, admission }
}
