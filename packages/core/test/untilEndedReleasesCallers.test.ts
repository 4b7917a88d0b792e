import { Deadline, ManualClock, untilEnded } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { stillReachable } from './support/collectGarbage.js'

/** Callers that wait on `shared` and give up (their deadline ends); what they held, weakly. */
async function callersGiveUp(shared: Promise<never>, count: number): Promise<WeakRef<object>[]> {
  const clock = new ManualClock()
  const held: WeakRef<object>[] = []
  const ended: Promise<unknown>[] = []
  for (let i = 0; i < count; i++) {
    const deadline = Deadline.after(10, { clock })
    const controller = new AbortController()
    held.push(new WeakRef(deadline), new WeakRef(controller.signal))
    ended.push(untilEnded(shared, { deadline, signal: controller.signal }).catch(() => {}))
  }
  clock.advance(10) // every caller's deadline ends: each gives up on `shared`
  await Promise.all(ended)
  return held
}

// A promise many callers wait on (a shared run, a store round trip that never
// answers) held each caller's wake — and through it the wait's settle, the
// deadline, the signal and all they reach (a request, its response, its
// body) — until it settled: every caller that gave up stayed reachable (2000
// of 2000 in the audit's repro).
describe('untilEnded on a promise that outlives its callers', () => {
  it('keeps none of the callers that gave up reachable from the promise', async () => {
    const shared = new Promise<never>(() => {})
    const held = await callersGiveUp(shared, 20)
    expect(await stillReachable(held)).toBe(0)
    // `shared` is still pending and reachable here: what it holds is what leaked.
    expect(shared).toBeInstanceOf(Promise)
  })
})
