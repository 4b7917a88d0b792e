import { setTimeout as sleep } from 'node:timers/promises'
import { currentDeadline, Deadline, remainingMs, runWithDeadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

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
