import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'

const quiet = { warn: () => {} }

/** An admission whose `acme` allows one request (or 10 tokens) a minute, on a manual clock. */
function oneAMinute(limit: { rpm?: number; tpm?: number }) {
  const clock = new ManualClock(1_000)
  const limits = new ProviderLimits({ limits: { acme: limit }, logger: quiet })
  const admission = new Admission({ clock, limits, logger: quiet })
  // A minute's window never resets within it: a spent limit is refused at once.
  const deadline = Deadline.after(5_000, { clock })
  const acquire = () => admission.acquire({ provider: 'acme', tokens: 10, deadline, neededMs: 0 })
  return { acquire, [Symbol.dispose]: () => deadline[Symbol.dispose]() }
}

/** Lets the give-back (not awaited by `release`) land. */
const settle = () => new Promise((resolve) => setImmediate(resolve))

describe('permit.release: a request not sent gives its RPM/TPM share back', () => {
  it.each([
    ['rpm', { rpm: 1 }],
    ['tpm', { tpm: 10 }],
  ] as const)(
    'released with { sent: false }, its %s share goes to the next request',
    async (_, limit) => {
      using limited = oneAMinute(limit)
      const { acquire } = limited
      ;(await acquire()).release({ sent: false })
      await settle()
      const next = await acquire()
      expect(next.key).toBeUndefined()
      // Taken by `next`, which was sent: the window is spent now.
      next.release()
      await settle()
      expect(isRateLimited(await acquire().catch((e: unknown) => e))).toBe(true)
    },
  )

  it('released as it always was (it may have reached the provider), the share stays counted', async () => {
    using limited = oneAMinute({ rpm: 1 })
    const { acquire } = limited
    ;(await acquire()).release()
    await settle()
    const refused = await acquire().catch((e: unknown) => e)
    expect(isRateLimited(refused)).toBe(true)
  })

  it('a permit reported, then released as not sent, gives nothing back: it settled once', async () => {
    using limited = oneAMinute({ rpm: 1 })
    const { acquire } = limited
    const permit = await acquire()
    await permit.report({ ok: true, latencyMs: 5 })
    permit.release({ sent: false })
    await settle()
    expect(isRateLimited(await acquire().catch((e: unknown) => e))).toBe(true)
  })
})
