import { Deadline, ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'

/**
 * A child given a clock of its own (`Deadline.after(ms, { parent, clock })`)
 * took its parent's `expiresAt` — a point on the PARENT's clock — as a point
 * on its own: two clocks start at different times (a ManualClock at 0,
 * `performance.now()` at the process's age), so under a parent with 5 s left
 * a child was born expired, or allowed hours. The parent's expiry is read as
 * the time it has left, on the child's clock.
 */
it("a child on another clock gets at most what its parent has left, not the parent's expiry read on the wrong scale", () => {
  const parentClock = new ManualClock(1_000_000)
  const childClock = new ManualClock(0)
  const parent = Deadline.after(5000, { clock: parentClock })
  parentClock.advance(1000) // 4 s left on the parent

  const longer = Deadline.after(60_000, { parent, clock: childClock })
  expect(longer.done).toBe(false)
  expect(longer.budgetMs).toBe(4000)
  expect(longer.expiresAt).toBe(4000)
  expect(longer.remaining()).toBe(4000)

  const shorter = Deadline.after(1000, { parent, clock: childClock })
  expect(shorter.budgetMs).toBe(1000)
  expect(shorter.remaining()).toBe(1000)

  // The other way round: a parent whose clock reads less than the child's.
  const early = new ManualClock(0)
  const late = new ManualClock(1_000_000)
  const p2 = Deadline.after(5000, { clock: early })
  const c2 = Deadline.after(2000, { parent: p2, clock: late })
  expect(c2.done).toBe(false)
  expect(c2.remaining()).toBe(2000)
  late.advance(2000)
  expect(c2.reason).toMatchObject({ code: 'DEADLINE_EXCEEDED' })

  // Still ended with its parent, on the parent's clock.
  parentClock.advance(4000)
  expect(longer.reason).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
  expect(shorter.reason).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
  p2.dispose()
})
