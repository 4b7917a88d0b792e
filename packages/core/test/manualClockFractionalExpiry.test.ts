import { Deadline, guard, ManualClock } from '@hourglass/core'
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
