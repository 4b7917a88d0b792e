import { systemClock } from '@hourglass/core'
import { expect, it } from 'vitest'
import { withDeadline } from '../src/index.js'

// withDeadline is called once, when the worker is made: a bad argument must
// fail there, naming itself. A missing processor threw "Cannot read
// properties of undefined (reading 'length')", and a clock without its
// methods was accepted and then failed every job that carried a deadline.

it('refuses a processor that is not a function with a TypeError naming it', () => {
  expect(() => withDeadline(undefined as never)).toThrow(
    new TypeError('withDeadline: processor must be a function, got undefined'),
  )
})

it('refuses a clock without now, setTimeout and clearTimeout when it is created', () => {
  const job = async () => 1
  for (const clock of [{}, 5, { ...systemClock, now: undefined }]) {
    expect(() => withDeadline(job, { clock: clock as never })).toThrow(/clock must be a Clock/)
  }
  expect(() => withDeadline(job, { clock: systemClock })).not.toThrow()
})

it('refuses a maxMs that is not a finite number > 0, or that is below minBudgetMs, with a RangeError naming it', () => {
  const job = async () => 1
  for (const maxMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, '60000']) {
    expect(() => withDeadline(job, { maxMs: maxMs as never })).toThrow(
      new RangeError(`withDeadline: maxMs must be a finite number > 0, got ${String(maxMs)}`),
    )
  }
  expect(() => withDeadline(job, { maxMs: 4, minBudgetMs: 5 })).toThrow(
    new RangeError('withDeadline: maxMs (4) must not be less than minBudgetMs (5)'),
  )
  expect(() => withDeadline(job, { maxMs: 5, minBudgetMs: 5 })).not.toThrow()
  expect(() => withDeadline(job, { maxMs: 86_400_000 })).not.toThrow()
})
