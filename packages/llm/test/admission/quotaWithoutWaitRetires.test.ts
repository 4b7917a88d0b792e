import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { isKeysRetired } from '../../src/errors/KeysRetiredError.js'
import { WaitClock } from '../support/waitClock.js'

// A quota gone for good with a wait that is no wait — NaN (a caller's own
// `Number(res.headers.get('retry-after')) * 1000` of an HTTP date), or a
// negative — was read as a wait: the key was cooled for a backoff step
// (~1 s) and probed again, a request spent on a spent account, without end.
// The cooldown itself reads such a hint as none (`serverHintMs`); so does
// the verdict now: retired, as a quota without a wait is.
describe('a quota reported with a wait that is no number of ms ≥ 0 retires the key, as one without a wait', () => {
  it.each([
    ['none', undefined],
    ['NaN', Number.NaN],
    ['a negative', -1],
  ])('%s', async (_, retryAfterMs) => {
    const clock = new ManualClock()
    const admission = new Admission({ clock })
    await admission.report('p', 'sk-1', {
      ok: false,
      error: { kind: 'quota_exhausted', status: 429, retryAfterMs },
    })
    // Short: cooled instead, the key is refused at once (RateLimitedError), not waited for.
    using deadline = Deadline.after(100, { clock })
    const acquired = admission.acquire({ provider: 'p', keys: ['sk-1'], deadline })
    await expect(acquired).rejects.toSatisfy(isKeysRetired)
    await expect(acquired).rejects.toMatchObject({ reason: 'quota_exhausted' })
  })

  it('a quota with a wait of its own still cools the key for it, then lets it go', async () => {
    const clock = new WaitClock()
    const admission = new Admission({ clock })
    await admission.report('p', 'sk-1', {
      ok: false,
      error: { kind: 'quota_exhausted', status: 429, retryAfterMs: 5000 },
    })
    using deadline = Deadline.after(60_000, { clock })
    const waiting = new Promise<void>((resolve) => {
      const stop = clock.onChange(() => {
        if (clock.pendingWaits === 0) return
        stop()
        resolve()
      })
    })
    const acquired = admission.acquire({ provider: 'p', keys: ['sk-1'], deadline, neededMs: 0 })
    await waiting
    clock.advance(5000)
    const permit = await acquired
    expect(permit.probe).toBe(true)
  })
})
