import { Deadline, ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import type { AdmissionPermit } from '../../src/admission/AdmissionPermit.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'

const quiet = { warn: () => {}, info: () => {} }

afterEach(() => {
  vi.useRealTimers()
})

/** Whether `promise` has settled, read without waiting for it. */
function settledFlag(promise: Promise<unknown>): () => boolean {
  let settled = false
  promise.then(
    () => (settled = true),
    () => (settled = true),
  )
  return () => settled
}

/** Every count and wake started so far runs to its end (the wall clock holds still meanwhile). */
async function settle(): Promise<void> {
  for (let i = 0; i < 50; i++) await new Promise((resolve) => setImmediate(resolve))
}

/**
 * An admission with `rpm: 1` for `acme` over `limits`, its clock a ManualClock
 * at 0 and the wall clock faked at 1_000_000; `step` moves both.
 */
function setUp(limits: ProviderLimits) {
  vi.useFakeTimers({ toFake: ['Date'] })
  vi.setSystemTime(1_000_000)
  const clock = new ManualClock(0)
  const admission = new Admission({ clock, limits, logger: quiet })
  const deadline = Deadline.after(10_000, { clock })
  const acquire = () => admission.acquire({ provider: 'acme', deadline, neededMs: 0 })
  const step = async (dateMs: number, clockMs: number) => {
    vi.setSystemTime(dateMs)
    clock.advance(clockMs - clock.now())
    await settle()
  }
  return { deadline, acquire, step }
}

const LIMITS = { limits: { acme: { rpm: 1 } }, windowMs: 1000, logger: quiet }

// The in-memory windows count on `Date.now()` (whole ms), the waits for their reset on the
// admission's clock (`performance.now()` by default, fractional): a caller that counted late in
// its millisecond was armed to wake up to a millisecond after one that came later. Each on its own
// timer, the later caller counted first at the reset and took the window; under a steady overload
// a caller waiting since the first window was refused at its deadline while later ones went.
describe('callers waiting for a limits window count again at its reset in line order', () => {
  it('the one waiting longest takes the reset, not the one whose timer fired first', async () => {
    const { deadline, acquire, step } = setUp(new ProviderLimits(LIMITS))
    try {
      await acquire() // takes the window: it ends at Date 1_001_000
      await step(1_000_001, 1.9)
      const first = acquire() // waits 999 ms: until clock 1000.9
      const firstDone = settledFlag(first)
      await settle()
      await step(1_000_500, 500.1)
      const later = acquire() // waits 500 ms: until clock 1000.1
      const laterDone = settledFlag(later)
      await settle()
      // The reset: the wall clock's window is over; the admission clock reaches both waits.
      await step(1_001_000, 1000.1)
      await step(1_001_000, 1000.9)
      await expect.poll(() => firstDone() || laterDone()).toBe(true)
      expect(firstDone()).toBe(true) // the caller waiting since 1.9 ms
      expect(laterDone()).toBe(false) // the one since 500.1 ms waits for the next window
      ;((await first) as AdmissionPermit).release()
    } finally {
      deadline.cancel(new Error('test over'))
    }
  })
  // A count answered late (a Redis round trip, an event loop busy as the answer came): the
  // caller's wait for the reset was dated from the answer, ms after the window counted it, and
  // the newcomer whose answer came at once was the one woken "in line order" (review R2).
  it('the one waiting longest takes the reset though its count was answered 3 ms late', async () => {
    let lag: Promise<void> | undefined
    class SlowLimits extends ProviderLimits {
      override async count(...args: Parameters<ProviderLimits['count']>) {
        const decision = await super.count(...args)
        if (lag) await lag
        return decision
      }
    }
    const { deadline, acquire, step } = setUp(new SlowLimits(LIMITS))
    try {
      await acquire()
      let open = () => {}
      lag = new Promise<void>((resolve) => {
        open = resolve
      })
      await step(1_000_001, 1)
      const first = acquire()
      const firstDone = settledFlag(first)
      await settle()
      await step(1_000_001, 4) // its answer read 3 ms after the window counted it
      lag = undefined
      open()
      await settle()
      await step(1_000_500, 500)
      const later = acquire()
      const laterDone = settledFlag(later)
      await settle()
      await step(1_001_000, 1000)
      await step(1_001_000, 1001)
      expect(firstDone()).toBe(true)
      expect(laterDone()).toBe(false)
      ;((await first) as AdmissionPermit).release()
    } finally {
      deadline.cancel(new Error('test over'))
    }
  })
})
