import { Deadline, guard, ManualClock, wait } from '@hourglass/core'
import { expect, it } from 'vitest'

// A ManualClock fires a timer at the very time asked for, fractions
// included. A Deadline rounded its timer's delay up to a whole ms (right for
// Node's, which truncate), so on a ManualClock a deadline with a fraction of
// a ms left read `expired` once `advance` reached its expiry, yet its timer
// had not fired: no abort, no `onExpire`, a share slice still `running`.

const settle = () => new Promise((resolve) => setImmediate(resolve))

it('ends a share slice whose allotment has a fraction of a ms when advance reaches it', async () => {
  const clock = new ManualClock()
  const plan = Deadline.after(100, { clock }).plan({ a: 1, b: 1, c: 1 }, { reserveMs: 0 })
  let outcome: unknown = 'pending'
  void plan
    .run('a', () => new Promise(() => {}))
    .catch((error) => {
      outcome = error
    })

  const allotted = plan.allotment('a') // 33.33… ms
  clock.advance(allotted)
  await settle()

  expect(outcome).toMatchObject({ code: 'DEADLINE_EXCEEDED', slice: 'a' })
  expect(plan.report()[0]).toMatchObject({ name: 'a', outcome: 'exceeded' })
})

it('aborts a deadline, and ends its guard, at a fractional expiry', async () => {
  const clock = new ManualClock()
  const expired: string[] = []
  const deadline = Deadline.after(0.5, { clock, onExpire: () => expired.push('onExpire') })
  let guarded: unknown = 'pending'
  void guard(new Promise(() => {}), { deadline }).catch((error) => {
    guarded = error
  })

  clock.advance(0.4)
  await settle()
  expect(deadline.signal.aborted).toBe(false) // never early

  clock.advance(0.1)
  await settle()
  expect(expired).toEqual(['onExpire'])
  expect(deadline.signal.aborted).toBe(true)
  expect(guarded).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
  expect(clock.pendingTimers).toBe(0)
})

// `wait` rounded its delay up to a whole ms on every clock, as Node's timers
// need: on a ManualClock a back-off of 0.5 ms was still pending once
// `advance(0.5)` reached its end, and resolved only at 1 ms.
it('resolves a wait of a fraction of a ms when advance reaches its end, not at the next whole ms', async () => {
  const clock = new ManualClock()
  let result: unknown = 'pending'
  void wait(0.5, { clock }).then((r) => {
    result = r
  })

  clock.advance(0.4)
  await settle()
  expect(result).toBe('pending') // never early

  clock.advance(0.1)
  await settle()
  expect(result).toBe('timer')
  expect(clock.pendingTimers).toBe(0)
})

it('resolves a wait under a deadline at its fractional end, the deadline still live', async () => {
  const clock = new ManualClock(1000.25)
  using deadline = Deadline.after(100, { clock })
  let result: unknown = 'pending'
  void wait(33.333333333333336, { clock, deadline }).then((r) => {
    result = r
  })

  clock.advance(33.333333333333336)
  await settle()
  expect(result).toBe('timer')
  expect(deadline.done).toBe(false)
})

// A deadline's timer is armed for `expiresAt - now`, which the clock adds
// back to its `now`: when armed after its start (a child sharing its
// parent's expiry, left to its own timer once the parent was disposed) that
// round trip can land one float step past the expiry — 0.3 + (0.9 − 0.3) is
// 0.9000000000000001. A clock that reached 0.9 another way then read the
// child `expired`, yet it had not aborted nor called onExpire.
it('ends a child left to its own timer by a disposed parent when the clock reaches its expiry', async () => {
  const clock = new ManualClock()
  const parent = Deadline.after(0.9, { clock })
  clock.advance(0.3)
  const expired: string[] = []
  const child = parent.child(Number.POSITIVE_INFINITY, {
    onExpire: () => expired.push('onExpire'),
  })
  let waited: unknown = 'pending'
  void wait(10, { deadline: child }).catch((error) => {
    waited = error
  })
  parent.dispose()

  clock.advance(0.1)
  clock.advance(0.5) // 0.4 + 0.5: exactly 0.9, the child's expiry
  expect(clock.now()).toBe(child.expiresAt)
  expect(child.expired).toBe(true)
  expect(expired).toEqual(['onExpire'])
  expect(child.signal.aborted).toBe(true)
  await settle()
  expect(waited).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
  expect(clock.pendingTimers).toBe(0)
})

// The other way round the round trip lands a float step short: 0.2 +
// (0.9 − 0.2) is 0.8999999999999999. There the child never expires early,
// and still expires at 0.9.
it('a child whose own timer lands a float step short of its expiry expires at it, not before', () => {
  const clock = new ManualClock()
  const parent = Deadline.after(0.9, { clock })
  clock.advance(0.2)
  const expired: number[] = []
  const child = parent.child(Number.POSITIVE_INFINITY, {
    onExpire: () => expired.push(clock.now()),
  })
  parent.dispose()

  clock.advance(0.7) // 0.8999999999999999: a float step short
  expect(child.expired).toBe(false)
  expect(expired).toEqual([])

  clock.advance(child.expiresAt - clock.now()) // the last step, to 0.9 exactly
  expect(clock.now()).toBe(0.9)
  expect(expired).toEqual([0.9])
  expect(child.signal.aborted).toBe(true)
  expect(clock.pendingTimers).toBe(0)
})
