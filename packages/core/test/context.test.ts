import { setTimeout as sleep } from 'node:timers/promises'
import { currentDeadline, Deadline, remainingMs, runWithDeadline } from '@hourglass/core'
import { describe, expect, it, vi } from 'vitest'

describe('AsyncLocalStorage context', () => {
  it('carries the deadline across awaits and timers, and is absent outside', async () => {
    const d = Deadline.after(10_000)
    expect(currentDeadline()).toBeUndefined()
    expect(remainingMs()).toBe(Number.POSITIVE_INFINITY)
    await runWithDeadline(d, async () => {
      await sleep(1)
      expect(currentDeadline()).toBe(d)
      expect(remainingMs()).toBeGreaterThan(9000)
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
