import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import { MemoryCooldownStore } from '../../src/admission/MemoryCooldownStore.js'
import { isRateLimited } from '../../src/errors/RateLimitedError.js'

const limited = {
  ok: false as const,
  error: { kind: 'rate_limited' as const, status: 429, retryAfterMs: 5000 },
}

/**
 * A ManualClock that aborts `guard` once read more than `limit` times: a
 * loop that waits 0 ms without end reads it for ever, and without this the
 * test would spin the worker instead of failing.
 */
class CountingClock extends ManualClock {
  readonly guard = new AbortController()
  #reads = 0
  override now(): number {
    if (++this.#reads > 10_000) this.guard.abort(new Error('spun: the clock was read 10 000 times'))
    return super.now()
  }
}

describe('NaN waits are refused, not spun on', () => {
  // NaN compared false with the time left, so a cooling provider was not
  // refused; the wait it armed was NaN, slept as 0 ms, and the loop came
  // straight back: the event loop never ran again.
  it('acquire({ neededMs: NaN }) on a cooling provider is a RangeError naming it', async () => {
    const clock = new CountingClock()
    const admission = new Admission({ clock })
    await admission.report('p', undefined, limited)
    using deadline = Deadline.after(60_000, { clock })
    const acquired = admission.acquire({
      provider: 'p',
      deadline,
      signal: clock.guard.signal,
      neededMs: Number.NaN,
    })
    await expect(acquired).rejects.toThrow(RangeError)
    await expect(acquired).rejects.toThrow(/neededMs/)
    expect(clock.pendingTimers).toBe(1) // the deadline's own timer only
  })

  it('new Admission({ defaultNeededMs: NaN }) is a RangeError naming it', () => {
    expect(() => new Admission({ defaultNeededMs: Number.NaN })).toThrow(RangeError)
    expect(() => new Admission({ defaultNeededMs: Number.NaN })).toThrow(/defaultNeededMs/)
  })

  it.each([
    'staggerMs',
    'probeLeaseMs',
    'latencySamples',
    'latencyPercentile',
    'retireMs',
    'storeBackoffMs',
  ] as const)('new Admission({ %s: NaN }) is a RangeError, a string a TypeError', (name) => {
    expect(() => new Admission({ [name]: Number.NaN })).toThrow(new RegExp(`${name}.*NaN`))
    expect(() => new Admission({ [name]: '5' as unknown as number })).toThrow(TypeError)
  })

  // Without a deadline every wait fits. An Infinity needed (callModel's
  // `retry.minAttemptMs: Infinity`, passed on as `minNeededMs`, or an
  // Admission's `defaultNeededMs`) made the time left to start Infinity −
  // Infinity, NaN: the same 0 ms wait without end as a NaN `neededMs`.
  it.each([
    ['acquire({ minNeededMs: Infinity })', {}, { minNeededMs: Number.POSITIVE_INFINITY }],
    ['acquire({ neededMs: Infinity })', {}, { neededMs: Number.POSITIVE_INFINITY }],
    [
      'new Admission({ defaultNeededMs: Infinity })',
      { defaultNeededMs: Number.POSITIVE_INFINITY },
      {},
    ],
  ] as const)(
    '%s without a deadline waits the cooldown out, not spinning',
    async (_, options, needed) => {
      const clock = new CountingClock()
      const admission = new Admission({ clock, ...options })
      await admission.report('p', undefined, limited)
      let outcome: unknown = 'pending'
      const acquired = admission
        .acquire({ provider: 'p', signal: clock.guard.signal, ...needed })
        .then(
          (permit) => {
            outcome = permit
          },
          (error: unknown) => {
            outcome = error
          },
        )
      await new Promise((resolve) => setImmediate(resolve))
      expect(outcome, 'still waiting for the cooldown').toBe('pending')
      clock.advance(5000)
      await acquired
      expect((outcome as { provider?: string }).provider, String(outcome)).toBe('p')
    },
  )

  // As a NaN `neededMs`: the floor under the figure read on each pass.
  it('acquire({ minNeededMs: NaN }) is a RangeError naming it', async () => {
    const admission = new Admission({ clock: new ManualClock() })
    await expect(admission.acquire({ provider: 'p', minNeededMs: Number.NaN })).rejects.toThrow(
      /minNeededMs/,
    )
  })

  // maxWaitMs NaN compared false with every wait: the caller's cap was ignored.
  it('acquire({ maxWaitMs: NaN }) is a RangeError naming it', async () => {
    const admission = new Admission({ clock: new ManualClock() })
    await expect(admission.acquire({ provider: 'p', maxWaitMs: Number.NaN })).rejects.toThrow(
      /maxWaitMs/,
    )
  })
})

/** A memory store that records the waits it is told (what Redis would be sent as `PX`). */
class RecordingStore extends MemoryCooldownStore {
  readonly waits: number[] = []
  override extend(provider: string, keyId: string, waitMs: number) {
    this.waits.push(waitMs)
    return super.extend(provider, keyId, waitMs)
  }
}

describe('a limit reported with a wait that is no number of ms still cools, for a finite time', () => {
  // A NaN hint made the cooldown NaN: the next call went at once, and Redis
  // refused the write ("value is not an integer"), logged as the store being
  // down. An Infinity of the caller's own cooled the model for good in this
  // process while the fleet never heard of it.
  it.each([
    ['a NaN server hint', { retryAfterMs: Number.NaN }],
    ['a negative server hint', { retryAfterMs: -5 }],
    ["a NaN caller's wait", { cooldownMs: Number.NaN }],
    ["an Infinity caller's wait", { cooldownMs: Number.POSITIVE_INFINITY }],
  ] as const)('%s: the backoff instead, here and in the store', async (_, given) => {
    const clock = new ManualClock()
    const store = new RecordingStore({ clock })
    const admission = new Admission({ clock, store, random: () => 0 })
    const { retryAfterMs, cooldownMs } = given as { retryAfterMs?: number; cooldownMs?: number }
    await admission.report(
      'p',
      'k',
      { ok: false, error: { kind: 'rate_limited', status: 429, retryAfterMs }, cooldownMs },
      { model: 'm' },
    )
    expect(store.waits, 'the wait written to the store').toEqual([1000])
    using deadline = Deadline.after(500, { clock })
    const refused = await admission
      .acquire({ provider: 'p', keys: ['k'], model: 'm', deadline, neededMs: 0 })
      .then(
        (permit) => permit,
        (error: unknown) => error,
      )
    expect(isRateLimited(refused), 'the next call is held back').toBe(true)
    expect((refused as { retryAfterMs: number }).retryAfterMs).toBe(1000)
  })
})
