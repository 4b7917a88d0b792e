import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { fromJobError, isJobDeadlineExceeded, JobDeadlineExceededError } from '../src/index.js'

// `fromJobError` runs in a catch block, on the failure path: a `deadline`
// option that is no Deadline (a number of ms, a Date, the remaining time)
// threw "current.remaining is not a function" from inside the error handler
// — and only for a job failed by its deadline, so it was found in
// production, in place of the 504. A Deadline passed where the options
// belong (`fromJobError(error, req.deadline)`) was silently ignored.

const jobReason = () =>
  new Error(
    new JobDeadlineExceededError({
      stage: 'running',
      jobId: '7',
      queue: 'reports',
      budgetMs: 3000,
      elapsedMs: 3000,
    }).message,
  )

describe('fromJobError: its options', () => {
  it.each([
    [5000, '5000'],
    [new Date(0), 'got an object'],
    ['soon', "'soon' (a string)"],
  ])(
    'a deadline that is no Deadline (%o) is a TypeError naming it, on any error',
    (deadline, shown) => {
      for (const error of [jobReason(), new Error('boom')]) {
        expect(() => fromJobError(error, { deadline: deadline as never })).toThrow(TypeError)
        expect(() => fromJobError(error, { deadline: deadline as never })).toThrow(
          /^fromJobError: deadline must be a Deadline from @hourglass\/core/,
        )
      }
      expect(() => fromJobError(jobReason(), { deadline: deadline as never })).toThrow(shown)
    },
  )

  it('a Deadline given in place of the options is a TypeError saying where it belongs', () => {
    const deadline = Deadline.after(1000, { clock: new ManualClock() })
    expect(() => fromJobError(jobReason(), deadline as never)).toThrow(
      new TypeError(
        'fromJobError: options must be an object ({ deadline }), got a Deadline: pass { deadline }',
      ),
    )
  })

  it('an unknown option (a typo) is refused', () => {
    expect(() => fromJobError(jobReason(), { deadLine: undefined } as never)).toThrow(TypeError)
  })

  it('null and undefined are none, as before', () => {
    expect(isJobDeadlineExceeded(fromJobError(jobReason(), { deadline: null as never }))).toBe(true)
    expect(isJobDeadlineExceeded(fromJobError(jobReason(), { deadline: undefined }))).toBe(true)
    expect(isJobDeadlineExceeded(fromJobError(jobReason(), null as never))).toBe(true)
    expect(isJobDeadlineExceeded(fromJobError(jobReason()))).toBe(true)
    const deadline = Deadline.after(1000, { clock: new ManualClock() })
    expect(isJobDeadlineExceeded(fromJobError(jobReason(), { deadline }))).toBe(true)
  })
})

it('the index Array.prototype.map passes as its second argument is no options, as before', () => {
  // JavaScript's `.map(fromJobError)` (TypeScript refuses it): the index as the options.
  const [first, second] = [jobReason(), new Error('boom')].map((error, index) =>
    fromJobError(error, index as never),
  )
  expect(isJobDeadlineExceeded(first)).toBe(true)
  expect(isJobDeadlineExceeded(second)).toBe(false)
})
