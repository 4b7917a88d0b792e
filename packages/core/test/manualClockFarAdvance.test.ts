import { Deadline, ManualClock } from '@hourglass/core'
import { expect, it, vi } from 'vitest'

const FAR = 1000 * 2 ** 31 // a thousand of Node's longest timers

// A deadline past 2^31-1 ms re-arms in steps of it (Node's timers overflow
// beyond), and on a ManualClock each step was one more timer to fire:
// advance(Number.MAX_SAFE_INTEGER) under a far deadline fired ~4.2 million
// of them, about a second of CPU. A ManualClock's timers do not overflow:
// the deadline's timer waits its whole delay there, one timer.
it('a far deadline on a ManualClock is one timer, not one per 2^31-1 ms', () => {
  const clock = new ManualClock()
  const setTimeout = vi.spyOn(clock, 'setTimeout')
  const deadline = Deadline.after(FAR, { clock })
  clock.advance(FAR - 1)
  expect(deadline.expired).toBe(false)
  clock.advance(1)
  expect(deadline.expired).toBe(true)
  expect(setTimeout).toHaveBeenCalledTimes(0)
  expect(clock.pendingTimers).toBe(0)
})

it('reaches Number.MAX_SAFE_INTEGER as a near advance does', () => {
  const clock = new ManualClock()
  const setTimeout = vi.spyOn(clock, 'setTimeout')
  const deadline = Deadline.after(Number.MAX_SAFE_INTEGER - 1, { clock })
  clock.advance(Number.MAX_SAFE_INTEGER)
  expect(deadline.expired).toBe(true)
  expect(setTimeout.mock.calls.length).toBeLessThan(3)
})

it('timers still fire in order of due time, then of creation', () => {
  const clock = new ManualClock()
  const fired: string[] = []
  const after = (name: string, ms: number) =>
    Deadline.after(ms, { clock, onExpire: () => fired.push(name) })
  after('far + 1', FAR + 1)
  clock.setTimeout(() => fired.push('plain, due first'), 2 ** 31 - 1)
  after('far', FAR)
  clock.advance(FAR - 2)
  clock.setTimeout(() => fired.push('plain, due with far, made after it'), 2)
  after('near, due with far, made last', 2)
  clock.advance(10)
  expect(fired).toEqual([
    'plain, due first',
    'far',
    'plain, due with far, made after it',
    'near, due with far, made last',
    'far + 1',
  ])
})

it('a far deadline cancelled or disposed leaves no timer behind', () => {
  const clock = new ManualClock()
  Deadline.after(FAR, { clock }).cancel()
  Deadline.after(FAR, { clock }).dispose()
  expect(clock.pendingTimers).toBe(0)
})

it('a far child under a far parent expires with it', () => {
  const clock = new ManualClock()
  const parent = Deadline.after(FAR, { clock })
  const child = parent.child(FAR * 2)
  clock.advance(FAR)
  expect(parent.expired).toBe(true)
  expect(child.expired).toBe(true)
  expect(clock.pendingTimers).toBe(0)
})
