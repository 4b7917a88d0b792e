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

it('refuses a maxMs that is not a finite number > 0 (RangeError; TypeError for another type), or that is below minBudgetMs, naming it', () => {
  const job = async () => 1
  for (const [maxMs, shown] of [
    [0, '0'],
    [-1, '-1'],
    [Number.NaN, 'NaN'],
    [Number.POSITIVE_INFINITY, 'Infinity'],
  ]) {
    expect(() => withDeadline(job, { maxMs: maxMs as never })).toThrow(
      new RangeError(`withDeadline: maxMs must be a finite number > 0, got ${shown}`),
    )
  }
  // A string from an env var is the wrong type, as addWithDeadline's maxMs says too.
  const fromEnv = () => withDeadline(job, { maxMs: '60000' as never })
  expect(fromEnv).toThrow(TypeError)
  expect(fromEnv).toThrow("withDeadline: maxMs must be a finite number > 0, got '60000' (a string)")
  expect(() => withDeadline(job, { maxMs: 4, minBudgetMs: 5 })).toThrow(
    new RangeError('withDeadline: maxMs (4) must not be less than minBudgetMs (5)'),
  )
  expect(() => withDeadline(job, { maxMs: 5, minBudgetMs: 5 })).not.toThrow()
  expect(() => withDeadline(job, { maxMs: 86_400_000 })).not.toThrow()
})

it('refuses an option it does not know (a typo) when it is created, naming the one meant', () => {
  const job = async () => 1
  const typo = () => withDeadline(job, { maxMS: 60_000 } as never)
  expect(typo).toThrow(TypeError)
  expect(typo).toThrow(
    /"maxMS" \(did you mean maxMs\?\).*withDeadline\(\) takes minBudgetMs, maxMs, clock/,
  )
  expect(() => withDeadline(job, { minBudgetMs: 5, maxMs: 60_000, clock: undefined })).not.toThrow()
})

// The value after "got" reads as every package shows one (core's
// describeValue): a string quoted and said to be one — `String('5')` read as
// the number 5, a value that would have been fine — an object by kind.
it('shows a bad value as every package does, naming the option', () => {
  const job = async () => 1
  const message = (options: unknown) => {
    try {
      withDeadline(job, options as never)
    } catch (error) {
      return (error as Error).message
    }
    throw new Error('expected the options to be refused')
  }
  expect(message({ minBudgetMs: '5' })).toBe(
    "withDeadline: minBudgetMs must be a number ≥ 0, got '5' (a string)",
  )
  expect(message({ minBudgetMs: -1 })).toBe(
    'withDeadline: minBudgetMs must be a number ≥ 0, got -1',
  )
  expect(message({ maxMs: { ms: 60_000 } })).toBe(
    'withDeadline: maxMs must be a finite number > 0, got an object',
  )
  expect(message({ clock: 'system' })).toBe(
    "withDeadline: clock must be a Clock (now, setTimeout and clearTimeout functions), got 'system' (a string)",
  )
  expect(() => withDeadline('job' as never)).toThrow(
    new TypeError("withDeadline: processor must be a function, got 'job' (a string)"),
  )
})
