import { Deadline, ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'

// `plan.end(name, outcome)` is typed to the five outcomes of a slice that is
// over; from plain JS any string was taken, and report() (and the sliceEnd
// event) then carried an outcome outside the documented set.

it('end refuses an outcome outside the five, naming them, and leaves the slice running', () => {
  const d = Deadline.after(1000, { clock: new ManualClock() })
  const plan = d.plan({ a: 1 })
  plan.slice('a')
  const end = (outcome: unknown) => () => plan.end('a', outcome as 'ok')
  expect(end('totally-bogus')).toThrow(
    new TypeError(
      "plan.end: outcome must be 'ok', 'exceeded', 'observed', 'failed' or 'cancelled', got 'totally-bogus' (a string)",
    ),
  )
  // The two outcomes of a slice not over are no way to end one either.
  expect(end('running')).toThrow(TypeError)
  expect(end('not-started')).toThrow(TypeError)
  expect(end(1)).toThrow(TypeError)
  expect(end(null)).toThrow(/got null/)
  expect(plan.report()[0]?.outcome).toBe('running')
  plan.end('a', 'failed')
  expect(plan.report()[0]?.outcome).toBe('failed')
  d.dispose()
})

it('end without an outcome still judges the slice itself', () => {
  const d = Deadline.after(1000, { clock: new ManualClock() })
  const plan = d.plan({ a: 1 })
  plan.slice('a')
  plan.end('a', undefined)
  expect(plan.report()[0]?.outcome).toBe('ok')
  d.dispose()
})
