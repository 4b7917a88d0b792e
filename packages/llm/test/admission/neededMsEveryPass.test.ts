import { type Clock, Deadline, enforcedRemaining, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import type { AdmissionPermit } from '../../src/admission/AdmissionPermit.js'
import {
  type CountedDecision,
  type LimitOptions,
  ProviderLimits,
} from '../../src/admission/ProviderLimits.js'

const KEY_A = 'sk-live-AAAAAAAAAAAAAAAAAAAAAAAA'
const KEY_B = 'sk-live-BBBBBBBBBBBBBBBBBBBBBBBB'

/** Let settled promises run their callbacks (no time passes on the manual clock). */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * An RPM limit whose window runs on `clock` (the memory limiter's runs on
 * real time), deciding `fitsDeadline` as `ProviderLimits` does: the reset
 * plus the `neededMs` admission passes must fit the time left.
 */
class ClockWindowLimits extends ProviderLimits {
  readonly #clock: Clock
  readonly #rpm: number
  readonly #windowMs: number
  #windowStart = Number.NEGATIVE_INFINITY
  #count = 0
  /** The `neededMs` of every count, in order. */
  readonly needed: number[] = []

  constructor(clock: Clock, rpm: number, windowMs: number) {
    super({ limits: { acme: { rpm } }, windowMs })
    this.#clock = clock
    this.#rpm = rpm
    this.#windowMs = windowMs
  }

  override async count(
    _provider: string,
    _tokens: number | (() => number),
    options: LimitOptions = {},
  ): Promise<CountedDecision> {
    const now = this.#clock.now()
    const neededMs = options.neededMs ?? 0
    this.needed.push(neededMs)
    if (now >= this.#windowStart + this.#windowMs) {
      this.#windowStart = now
      this.#count = 0
    }
    if (this.#count < this.#rpm) {
      this.#count++
      return { admitted: true }
    }
    const retryAfterMs = this.#windowStart + this.#windowMs - now
    return {
      admitted: false,
      limit: 'rpm',
      retryAfterMs,
      retryAtMs: retryAfterMs,
      fitsDeadline: retryAfterMs + neededMs <= enforcedRemaining(options.deadline),
    }
  }
}

describe('the time a waiting call needs is read on every pass, not once when it joined the line', () => {
  it('an RPM window reset is waited for once the calls answered meanwhile measured the latency (not refused on the 1000 ms default)', async () => {
    const clock = new ManualClock(1_000)
    const limits = new ClockWindowLimits(clock, 1, 1000)
    // The 1000 ms default: nothing measured yet when the three calls come.
    const gate = new Admission({ clock, limits, staggerMs: 0, logger: { warn: () => {} } })
    const deadline = Deadline.after(2700, { clock })
    const permits: AdmissionPermit[] = []
    const errors: unknown[] = []
    for (let i = 0; i < 3; i++) {
      void gate.acquire({ provider: 'acme', deadline }).then(
        (permit) => permits.push(permit),
        (error: unknown) => errors.push(error),
      )
    }
    await flush()
    // One goes; the other two wait for the reset (1000 ms, + 1000 ms needed, fits 2700 ms).
    expect(permits).toHaveLength(1)
    expect(errors).toEqual([])
    await permits[0]?.report({ ok: true, latencyMs: 30 })
    expect(gate.neededMs('acme')).toBe(30)

    clock.advance(1000)
    await flush()
    // The second goes; the third has 1700 ms left, needs 30: the next reset (1000 ms) fits.
    expect(errors).toEqual([])
    expect(permits).toHaveLength(2)
    expect(limits.needed.at(-1)).toBe(30)

    clock.advance(1000)
    await flush()
    expect(errors).toEqual([])
    expect(permits).toHaveLength(3)
    deadline.dispose()
  })

  it('a cooldown extended while a call waits is measured against the latency known then', async () => {
    const clock = new ManualClock(1_000)
    const gate = new Admission({ clock, staggerMs: 0, logger: { warn: () => {} } })
    const limited = (retryAfterMs: number) => ({
      ok: false as const,
      error: { kind: 'rate_limited' as const, status: 429, retryAfterMs },
    })
    await gate.report('acme', KEY_A, limited(500))
    const deadline = Deadline.after(2000, { clock })
    let outcome: AdmissionPermit | unknown
    // Key A only: it waits 500 ms (fits 2000 ms with the 1000 ms default).
    void gate.acquire({ provider: 'acme', keys: [KEY_A], deadline }).then(
      (permit) => {
        outcome = permit
      },
      (error: unknown) => {
        outcome = error
      },
    )
    await flush()
    expect(outcome).toBeUndefined()
    // Meanwhile another call, on key B, measured the provider at 30 ms…
    await gate.report('acme', KEY_B, { ok: true, latencyMs: 30 })
    // …and another 429 on key A made its cooldown 1500 ms: 1500 + 30 fits the 2000 ms left.
    await gate.report('acme', KEY_A, limited(1500))
    await flush()
    expect(outcome).toBeUndefined()
    clock.advance(1500)
    await flush()
    expect((outcome as AdmissionPermit | undefined)?.key).toBe(KEY_A)
    deadline.dispose()
  })

  it("a floor (callModel's retry.minAttemptMs) stays under the figure read on each pass, not fixed at the one known when the call joined", async () => {
    const clock = new ManualClock(1_000)
    const limits = new ClockWindowLimits(clock, 1, 1000)
    const gate = new Admission({ clock, limits, staggerMs: 0, logger: { warn: () => {} } })
    const deadline = Deadline.after(2700, { clock })
    const permits: AdmissionPermit[] = []
    const errors: unknown[] = []
    for (let i = 0; i < 3; i++) {
      void gate.acquire({ provider: 'acme', deadline, minNeededMs: 200 }).then(
        (permit) => permits.push(permit),
        (error: unknown) => errors.push(error),
      )
    }
    await flush()
    expect(permits).toHaveLength(1)
    // Not yet measured: the 1000 ms default is above the floor.
    expect(new Set(limits.needed)).toEqual(new Set([1000]))
    await permits[0]?.report({ ok: true, latencyMs: 30 })
    clock.advance(1000)
    await flush()
    // Measured at 30 ms: the floor, 200, is what is needed now.
    expect(errors).toEqual([])
    expect(permits).toHaveLength(2)
    expect(limits.needed.at(-1)).toBe(200)
    clock.advance(1000)
    await flush()
    expect(errors).toEqual([])
    expect(permits).toHaveLength(3)
    deadline.dispose()
  })
})
