import { Deadline, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import type { CooldownExtension, CooldownStore } from '../../src/admission/CooldownStore.js'
import { MemoryCooldownStore } from '../../src/admission/MemoryCooldownStore.js'
import { RedisCooldownStore } from '../../src/admission/RedisCooldownStore.js'
import type { NormalizedError } from '../../src/types.js'

/**
 * A store of the user's own (on another database, say) that has stopped
 * answering: every call is held, and counted. `asked` resolves when the
 * next call comes in.
 */
class SilentStore implements CooldownStore {
  reads = 0
  writes = 0
  #onCall: Array<() => void> = []

  remaining(): Promise<number[]> {
    this.reads++
    this.#called()
    return new Promise(() => {})
  }

  extend(): Promise<CooldownExtension> {
    this.writes++
    this.#called()
    return new Promise(() => {})
  }

  asked(): Promise<void> {
    return new Promise((resolve) => this.#onCall.push(resolve))
  }

  #called(): void {
    for (const resolve of this.#onCall.splice(0)) resolve()
  }
}

const RATE_LIMITED: NormalizedError = {
  kind: 'rate_limited',
  status: 429,
  retryable: true,
  retryAfterMs: 5000,
  message: 'slow down',
}

/** Settles `promise` into a flag the test reads after moving the clock. */
function watch(promise: Promise<unknown>): { settled: boolean } {
  const state = { settled: false }
  promise.then(
    () => {
      state.settled = true
    },
    () => {
      state.settled = true
    },
  )
  return state
}

/** Lets every promise reaction queued so far run (no time passes on any clock). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('a cooldown store of your own that never answers holds no call past storeTimeoutMs (default 1000)', () => {
  it('a call without a deadline is granted after 1000 ms on the clock, on this process view; the store failing is said once', async () => {
    const clock = new ManualClock()
    const store = new SilentStore()
    const warnings: string[] = []
    const admission = new Admission({ store, clock, logger: { warn: (m) => warnings.push(m) } })
    const asked = store.asked()
    const acquiring = admission.acquire({ provider: 'p', keys: ['k'], neededMs: 0 })
    const state = watch(acquiring)
    await asked
    clock.advance(999)
    await settle()
    expect(state.settled).toBe(false)
    clock.advance(1)
    const permit = await acquiring
    expect(permit.key).toBe('k')
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(
      /cooldown store unavailable.*did not answer within 1000 ms \(Admission storeTimeoutMs\)/,
    )
    permit.release()
  })

  it('a call with a long deadline is not held to it: granted after the bound, not failed at the deadline', async () => {
    const clock = new ManualClock()
    const admission = new Admission({ store: new SilentStore(), clock, logger: { warn() {} } })
    using deadline = Deadline.after(60_000, { clock })
    const acquiring = admission.acquire({ provider: 'p', keys: ['k'], deadline, neededMs: 0 })
    await settle()
    clock.advance(1000)
    const permit = await acquiring
    expect(permit.key).toBe('k')
    permit.release()
  })

  it("a report's cooldown write that is never answered settles after the bound; the cooldown holds in this process", async () => {
    const clock = new ManualClock()
    const store = new SilentStore()
    const admission = new Admission({
      store,
      clock,
      // Only the write is under test, and out of a back-off: during one a
      // write is not waited for (storeBackoffWrites.test.ts).
      storeBackoffMs: 0,
      logger: { warn() {} },
    })
    const granted = admission.acquire({ provider: 'p', keys: ['k'], neededMs: 0 })
    await settle()
    clock.advance(1000)
    const permit = await granted
    const written = store.asked()
    const reporting = permit.report({ ok: false, error: RATE_LIMITED })
    const state = watch(reporting)
    await written
    expect(store.writes).toBe(1)
    clock.advance(999)
    await settle()
    expect(state.settled).toBe(false)
    clock.advance(1)
    await expect(reporting).resolves.toBeUndefined()
    expect(admission.forecast({ provider: 'p', keys: ['k'] }).waitMs).toBe(4000)
  })

  it('storeTimeoutMs sets the bound', async () => {
    const clock = new ManualClock()
    const admission = new Admission({
      store: new SilentStore(),
      clock,
      storeTimeoutMs: 250,
      logger: { warn() {} },
    })
    const acquiring = admission.acquire({ provider: 'p', keys: ['k'], neededMs: 0 })
    const state = watch(acquiring)
    await settle()
    clock.advance(249)
    await settle()
    expect(state.settled).toBe(false)
    clock.advance(1)
    ;(await acquiring).release()
  })

  it('storeTimeoutMs Infinity: none, the deadline still ends the call', async () => {
    const clock = new ManualClock()
    const admission = new Admission({
      store: new SilentStore(),
      clock,
      storeTimeoutMs: Number.POSITIVE_INFINITY,
      logger: { warn() {} },
    })
    using deadline = Deadline.after(60_000, { clock })
    const acquiring = admission.acquire({ provider: 'p', keys: ['k'], deadline, neededMs: 0 })
    const state = watch(acquiring)
    await settle()
    clock.advance(59_999)
    await settle()
    expect(state.settled).toBe(false)
    clock.advance(1)
    expect(isDeadlineExceeded(await acquiring.catch((e: unknown) => e))).toBe(true)
  })

  it("a RedisCooldownStore is bounded by its own commandTimeoutMs, not cut short by admission's default", async () => {
    const clock = new ManualClock()
    let sent = 0
    // A client whose commands never come back, and a store told to wait for them.
    const store = new RedisCooldownStore(
      {
        evalsha: () => {
          sent++
          return new Promise(() => {})
        },
        eval: () => new Promise(() => {}),
      },
      { commandTimeoutMs: Number.POSITIVE_INFINITY },
    )
    const admission = new Admission({ store, clock, logger: { warn() {} } })
    using deadline = Deadline.after(60_000, { clock })
    const acquiring = admission.acquire({ provider: 'p', keys: ['k'], deadline, neededMs: 0 })
    const state = watch(acquiring)
    await settle()
    expect(sent).toBe(1)
    clock.advance(10_000)
    await settle()
    expect(state.settled).toBe(false)
    clock.advance(50_000)
    expect(isDeadlineExceeded(await acquiring.catch((e: unknown) => e))).toBe(true)
  })

  it('the in-memory store arms no timer for it', async () => {
    const clock = new ManualClock()
    const admission = new Admission({ store: new MemoryCooldownStore({ clock }), clock })
    const acquiring = admission.acquire({ provider: 'p', keys: ['k'], neededMs: 0 })
    expect(clock.pendingTimers).toBe(0)
    ;(await acquiring).release()
  })

  it.each([
    [0, RangeError],
    [-1, RangeError],
    [Number.NaN, RangeError],
    ['1000', TypeError],
  ])('storeTimeoutMs %s is refused, naming it', (value, type) => {
    expect(() => new Admission({ storeTimeoutMs: value as number })).toThrow(type)
    expect(() => new Admission({ storeTimeoutMs: value as number })).toThrow(/storeTimeoutMs/)
  })
})
