import { ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { Admission } from '../../src/admission/Admission.js'
import type { CooldownExtension, CooldownStore } from '../../src/admission/CooldownStore.js'

/** A store of the user's own that has stopped answering: every call held for good, and counted. */
class HungStore implements CooldownStore {
  reads = 0

  remaining(): Promise<number[]> {
    this.reads++
    return new Promise(() => {})
  }

  extend(): Promise<CooldownExtension> {
    return new Promise(() => {})
  }
}

/** Settles `promise` into a flag the test reads after moving the clock. */
function watch<T>(promise: Promise<T>): { settled: boolean } {
  const state = { settled: false }
  const done = () => {
    state.settled = true
  }
  promise.then(done, done)
  return state
}

/** Lets every promise reaction queued so far run (no time passes on any clock). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

// With `storeBackoffMs` 0 by default for any store but a RedisCooldownStore,
// a store of the user's that hung cost every `acquire` the whole
// `storeTimeoutMs` (each asked it again), where a frozen Redis costs one
// timeout per back-off.
describe('a store of your own that hangs backs off by default, as Redis does', () => {
  it('one acquire waits storeTimeoutMs; the next ones, within 1000 ms of its failure, decide at once; then one asks again', async () => {
    const clock = new ManualClock()
    const store = new HungStore()
    const admission = new Admission({ store, clock, logger: { warn() {} } })
    const target = { provider: 'p', keys: ['k'], neededMs: 0 }

    const first = admission.acquire(target)
    const firstState = watch(first)
    await settle()
    expect(store.reads).toBe(1)
    expect(firstState.settled).toBe(false)
    clock.advance(1000) // storeTimeoutMs: the store counts as failing
    ;(await first).release()

    // Within the back-off: granted at once, on this process's view, without asking.
    for (const step of [0, 500, 499]) {
      clock.advance(step)
      const next = admission.acquire(target)
      const state = watch(next)
      await settle()
      expect(state.settled).toBe(true)
      ;(await next).release()
    }
    expect(store.reads).toBe(1)

    // 1000 ms after the failure: one asks again, and waits its bound.
    clock.advance(1)
    const retry = admission.acquire(target)
    const retryState = watch(retry)
    await settle()
    expect(store.reads).toBe(2)
    expect(retryState.settled).toBe(false)
    // The others stay local while it is asked.
    const meanwhile = admission.acquire(target)
    const meanwhileState = watch(meanwhile)
    await settle()
    expect(meanwhileState.settled).toBe(true)
    expect(store.reads).toBe(2)
    ;(await meanwhile).release()
    clock.advance(1000)
    ;(await retry).release()
  })

  it('storeBackoffMs 0 still asks it on every call', async () => {
    const clock = new ManualClock()
    const store = new HungStore()
    const admission = new Admission({ store, clock, storeBackoffMs: 0, logger: { warn() {} } })
    const target = { provider: 'p', keys: ['k'], neededMs: 0 }
    for (let i = 1; i <= 3; i++) {
      const next = admission.acquire(target)
      const state = watch(next)
      await settle()
      expect(store.reads).toBe(i)
      expect(state.settled).toBe(false)
      clock.advance(1000)
      ;(await next).release()
    }
  })
})
