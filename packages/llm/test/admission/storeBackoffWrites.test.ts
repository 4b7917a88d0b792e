import { ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import type { CooldownExtension, CooldownStore } from '../../src/admission/CooldownStore.js'

/** A store that never answers (a frozen Redis): every write is counted, none settles — until `thawed`. */
class FrozenStore implements CooldownStore {
  writes = 0
  thawed = false

  remaining(): Promise<number[]> {
    if (this.thawed) return Promise.resolve([])
    return new Promise(() => {})
  }

  extend(): Promise<CooldownExtension> {
    this.writes++
    if (this.thawed) return Promise.resolve({ remainingMs: 60_000, extended: true })
    return new Promise(() => {})
  }
}

/** Whether `promise` has settled once pending callbacks have run (no clock advanced). */
async function settledNow(promise: Promise<unknown>): Promise<boolean> {
  let settled = false
  promise.then(
    () => (settled = true),
    () => (settled = true),
  )
  await new Promise((resolve) => setImmediate(resolve))
  return settled
}

const limit = { ok: false as const, error: { kind: 'rate_limited' as const, status: 429 } }

describe('a store that stopped answering holds a report for one timeout per back-off', () => {
  // `callModel` waits for a report before its next attempt. With Redis
  // frozen, every 429 waited the store's timeout for its cooldown's write:
  // a call whose three keys answered 429 took 3 s more to reach its
  // fallback, call after call, for as long as Redis stayed frozen.
  it('during the back-off a cooldown is still written, and the report does not wait for it', async () => {
    const clock = new ManualClock()
    const store = new FrozenStore()
    const admission = new Admission({
      store,
      clock,
      storeTimeoutMs: 1000,
      storeBackoffMs: 1000,
      logger: { warn: () => {}, info: () => {} },
    })
    const first = admission.report('acme', 'key-1', limit)
    expect(await settledNow(first)).toBe(false)
    clock.advance(1000)
    await first

    // Within the back-off: the others are written (the fleet hears if the
    // store is back), and their reports settle at once.
    const during = [
      admission.report('acme', 'key-2', limit),
      admission.report('acme', 'key-3', limit),
    ]
    for (const report of during) expect(await settledNow(report)).toBe(true)
    expect(store.writes).toBe(3)
    // The local view holds them all.
    expect(
      admission.forecast({ provider: 'acme', keys: ['key-2', 'key-3'] }).waitMs,
    ).toBeGreaterThan(0)

    // Those writes time out too, which starts the back-off over; after
    // it, a write is waited for again, bounded as before.
    clock.advance(1000)
    await new Promise((resolve) => setImmediate(resolve))
    clock.advance(1000)
    const after = admission.report('acme', 'key-4', limit)
    expect(await settledNow(after)).toBe(false)
    clock.advance(1000)
    await after
    expect(store.writes).toBe(4)
  })

  // Once a back-off had run out, every report waited the store's timeout
  // until the first write's failure started the next back-off: three keys
  // answering 429 at once held all three calls for the full timeout.
  it('once the back-off has run out, the first write is the one retry: the reports meanwhile do not wait', async () => {
    const clock = new ManualClock()
    const store = new FrozenStore()
    const admission = new Admission({
      store,
      clock,
      storeTimeoutMs: 1000,
      storeBackoffMs: 1000,
      logger: { warn: () => {}, info: () => {} },
    })
    const first = admission.report('acme', 'key-1', limit)
    clock.advance(1000)
    await first
    clock.advance(1000) // the back-off is over, nothing asked since

    const retry = admission.report('acme', 'key-2', limit)
    const meanwhile = [
      admission.report('acme', 'key-3', limit),
      admission.report('acme', 'key-4', limit),
    ]
    expect(await settledNow(retry)).toBe(false)
    for (const report of meanwhile) expect(await settledNow(report)).toBe(true)
    // All written: the fleet hears of them if the store answers.
    expect(store.writes).toBe(4)
    clock.advance(1000)
    await retry

    // The store answers again: the next retry is waited for, and clears the back-off.
    store.thawed = true
    clock.advance(1000)
    await admission.report('acme', 'key-5', limit)
    const after = admission.report('acme', 'key-6', limit)
    expect(await settledNow(after)).toBe(true)
    expect(store.writes).toBe(6)
  })
})
