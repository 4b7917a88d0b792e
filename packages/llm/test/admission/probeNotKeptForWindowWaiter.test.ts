import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import type { AdmissionPermit } from '../../src/admission/AdmissionPermit.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'

const quiet = { warn: () => {}, info: () => {} }

/**
 * After a 429's cooldown the caller waiting longest sends the half-open
 * probe. One whose request then does not fit the TPM window waits for the
 * window's reset (a minute away here: the windows run on the wall clock,
 * which this test never moves that far) — and must not keep the probe
 * meanwhile: kept for it, a smaller request that fitted the window, on a
 * key no longer cooling, waited with it until its own deadline and ended
 * DEADLINE_EXCEEDED, nothing sent.
 */
describe('a caller waiting for a limits window keeps no probe', () => {
  it('lets a request that fits take the probe when the cooldown ends', async () => {
    const clock = new ManualClock(1_000)
    const limits = new ProviderLimits({ limits: { acme: { tpm: 1000 } }, logger: quiet })
    const admission = new Admission({ clock, limits, logger: quiet })
    const long = Deadline.after(120_000, { clock })
    const short = Deadline.after(2_000, { clock })
    const acquire = (tokens: number, deadline: Deadline) =>
      admission.acquire({
        provider: 'acme',
        keys: ['sk-live-AAAAAAAAAAAAAAAAAAAAAAAA'],
        model: 'm',
        tokens,
        deadline,
        neededMs: 0,
      })
    // The waits admission starts (`hourglass:llm:admission`, action `wait`), by cause.
    const waits: string[] = []
    const onAdmission = (message: unknown) => {
      const { action, cause } = message as { action: string; cause: string }
      if (action === 'wait') waits.push(cause)
    }
    subscribe('hourglass:llm:admission', onAdmission)
    try {
      const first = await acquire(500, long)
      await first.report({
        ok: false,
        error: { kind: 'rate_limited', status: 429, retryAfterMs: 300 },
      })
      // First in line; 600 tokens do not fit beside the 500 counted until the reset.
      let big: AdmissionPermit | Error | undefined
      const bigDone = acquire(600, long).then(
        (permit) => (big = permit),
        (error: Error) => (big = error),
      )
      let small: AdmissionPermit | Error | undefined
      const smallDone = acquire(100, short).then(
        (permit) => (small = permit),
        (error: Error) => (small = error),
      )
      // Both wait on the cooldown before it ends.
      await expect.poll(() => waits.filter((cause) => cause === 'cooldown').length).toBe(2)
      clock.advance(300) // the cooldown ends
      await expect.poll(() => small).toBeDefined()
      expect(small).not.toBeInstanceOf(Error)
      expect((small as AdmissionPermit).probe).toBe(true)
      // The big one still waits for its window, its deadline far off.
      expect(waits).toContain('tpm')
      expect(big).toBeUndefined()
      await (small as AdmissionPermit).report({ ok: true, latencyMs: 10 })
      long.cancel(new Error('test over'))
      await Promise.all([bigDone, smallDone])
      expect(big).toBeInstanceOf(Error)
    } finally {
      unsubscribe('hourglass:llm:admission', onAdmission)
      long.cancel(new Error('test over'))
      short.cancel(new Error('test over'))
    }
  })
})
