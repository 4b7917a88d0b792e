import { Deadline } from '@hourglass/core'
import { expect, it } from 'vitest'

// The constructor is private to TypeScript only. From JavaScript,
// `new Deadline(5000)` — what a reader of "class Deadline" tries first —
// threw "Cannot read properties of undefined (reading 'parent')", naming
// neither the mistake nor the way to make a deadline.

it('new Deadline(ms) from JavaScript names Deadline.after and Deadline.never', () => {
  const Ctor = Deadline as unknown as new (...args: unknown[]) => Deadline
  expect(() => new Ctor(5000)).toThrow(
    new TypeError(
      'Deadline: make one with Deadline.after(ms, options?) or Deadline.never(options?); the constructor is not public (got new Deadline(5000))',
    ),
  )
  expect(() => new Ctor(5000, null)).toThrow(/^Deadline: make one with Deadline\.after/)
  // The ways it names work.
  const made = Deadline.after(5000)
  expect(made.remaining()).toBeGreaterThan(4000)
  made.dispose()
})
