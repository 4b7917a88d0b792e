import { Deadline, ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'

// A timer whose callback threw stopped `advance` there: the timers due after
// it in the same step never ran (a deadline due later in the step stayed
// live), and the clock stayed at the thrower's due time, short of the step.
// Vitest's fake timers (@sinonjs/fake-timers) run the rest of the step and
// then rethrow the first error; so does ManualClock now.

it('runs every timer due in the step, then rethrows the first error', () => {
  const clock = new ManualClock()
  const first = new Error('first timer broke')
  const ran: string[] = []
  clock.setTimeout(() => {
    ran.push('a')
    throw first
  }, 10)
  clock.setTimeout(() => {
    ran.push('b')
    throw new Error('second timer broke')
  }, 20)
  clock.setTimeout(() => ran.push('c'), 30)
  const deadline = Deadline.after(40, { clock })

  expect(() => clock.advance(100)).toThrow(first)
  expect(ran).toEqual(['a', 'b', 'c'])
  expect(deadline.expired).toBe(true)
  expect(clock.now()).toBe(100)
  expect(clock.pendingTimers).toBe(0)
})

it('rethrows a thrown value that is not an Error, undefined included', () => {
  const clock = new ManualClock()
  let later = false
  clock.setTimeout(() => {
    throw undefined
  }, 1)
  clock.setTimeout(() => {
    later = true
  }, 2)
  let caught: unknown = 'nothing thrown'
  try {
    clock.advance(5)
  } catch (error) {
    caught = error
  }
  expect(caught).toBe(undefined)
  expect(later).toBe(true)
  expect(clock.now()).toBe(5)
})
