import {
  captureContext,
  currentDeadline,
  Deadline,
  runInContext,
  runWithDeadline,
} from '@hourglass/core'
import { expect, it } from 'vitest'

// Two installed copies of core share the one context (a global symbol), so a
// snapshot one copy captured runs in the other's `runInContext`. The query
// makes a second instance of the module, as a second installed copy is.
const other = (await import(
  // @ts-expect-error -- a query the module resolver does not type
  '../src/context.ts?capture-context-copy'
)) as typeof import('../src/context.js')

it('is a second module instance (the premise)', () => {
  expect(other.captureContext).not.toBe(captureContext)
})

it("a snapshot of no context taken by one copy runs in the other copy's runInContext, outside every deadline", () => {
  const outside = captureContext()
  const otherOutside = other.captureContext()
  const d = Deadline.after(10_000)
  runWithDeadline(d, () => {
    expect(other.runInContext(outside, () => currentDeadline())).toBeUndefined()
    expect(runInContext(otherOutside, () => currentDeadline())).toBeUndefined()
    expect(currentDeadline()).toBe(d)
  })
  d.dispose()
})

it("a snapshot of a deadline taken by one copy runs in the other's, as before", () => {
  const d = Deadline.after(10_000)
  const inside = runWithDeadline(d, () => captureContext())
  expect(other.runInContext(inside, () => currentDeadline())).toBe(d)
  d.dispose()
})
