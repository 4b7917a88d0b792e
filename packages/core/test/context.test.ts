import { setTimeout as sleep } from 'node:timers/promises'
import {
  captureContext,
  currentDeadline,
  Deadline,
  ManualClock,
  remainingMs,
  runInContext,
  runWithDeadline,
} from '@hourglass/core'
import { describe, expect, it, vi } from 'vitest'

describe('AsyncLocalStorage context', () => {
  it('carries the deadline across awaits and timers, and is absent outside', async () => {
    // On a clock of the test's: the awaits below are real (a timer, a turn
    // of the loop), the deadline's time is not. On the real clock the read
    // below held only while this worker ran within 1 s of the deadline's
    // making, which four workers on two cores need not; here it is exact.
    const d = Deadline.after(10_000, { clock: new ManualClock() })
    expect(currentDeadline()).toBeUndefined()
    expect(remainingMs()).toBe(Number.POSITIVE_INFINITY)
    await runWithDeadline(d, async () => {
      await sleep(1)
      expect(currentDeadline()).toBe(d)
      expect(remainingMs()).toBe(10_000)
      await new Promise<void>((resolve) =>
        setImmediate(() => {
          expect(currentDeadline()).toBe(d)
          resolve()
        }),
      )
    })
    expect(currentDeadline()).toBeUndefined()
    d.dispose()
  })

  it('nests: an inner deadline shadows the outer one only inside', () => {
    const outer = Deadline.after(1000)
    const inner = outer.child(10)
    runWithDeadline(outer, () => {
      runWithDeadline(inner, () => expect(currentDeadline()).toBe(inner))
      expect(currentDeadline()).toBe(outer)
    })
    outer.cancel()
  })
})

it('runWithDeadline refuses what is no deadline at the call, not at every read below it', () => {
  const fn = vi.fn()
  expect(() => runWithDeadline({ ms: 50 } as never, fn)).toThrow(
    new TypeError('runWithDeadline expects a Deadline, got an object'),
  )
  expect(() => runWithDeadline(500 as never, fn)).toThrow(/got 500/)
  expect(fn).not.toHaveBeenCalled()
})

describe('captureContext / runInContext', () => {
  it('runs a callback later in what was captured: a deadline, a hidden one, or no context at all', () => {
    const d = Deadline.after(10_000)
    const inside = runWithDeadline(d, () => captureContext())
    const hidden = runWithDeadline(d, () => runWithDeadline(undefined, () => captureContext()))
    const outside = captureContext()
    const other = Deadline.after(10_000)
    runWithDeadline(other, () => {
      expect(runInContext(inside, () => currentDeadline())).toBe(d)
      expect(runInContext(hidden, () => currentDeadline())).toBeUndefined()
      expect(runInContext(outside, () => currentDeadline())).toBeUndefined()
      // Only for the call: the caller's own context is back after it.
      expect(currentDeadline()).toBe(other)
    })
    d.dispose()
    other.dispose()
  })

  it('refuses what captureContext did not return, naming it', () => {
    const fn = vi.fn()
    expect(() => runInContext({} as never, fn)).toThrow(
      new TypeError('runInContext expects what captureContext() returned, got an object'),
    )
    expect(() => runInContext(undefined as never, fn)).toThrow(/got undefined/)
    expect(fn).not.toHaveBeenCalled()
  })
})
