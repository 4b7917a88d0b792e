import {
  captureContext,
  contextKey,
  runInContext,
  runOutsideContext,
  runWithContext,
  runWithRequestId,
} from '@hourglass/core'
import { expect, it } from 'vitest'

// runWithDeadline refuses an fn that is no function with a TypeError naming
// the call; its siblings passed it to AsyncLocalStorage, whose refusal
// ("Function.prototype.apply was called on undefined, which is a undefined
// and not a function") named neither the call nor the argument — the usual
// slip being `runWithRequestId(next)` with the id forgotten.

it.each([
  ['runWithRequestId', () => runWithRequestId('r1', 5 as never)],
  ['runWithRequestId', () => runWithRequestId((() => 'work') as never, undefined as never)],
  ['runWithContext', () => runWithContext(contextKey<number>('k'), 1, undefined as never)],
  ['runInContext', () => runInContext(captureContext(), 5 as never)],
  ['runOutsideContext', () => runOutsideContext(5 as never)],
])('%s refuses an fn that is no function, naming itself', (name, call) => {
  expect(call).toThrow(TypeError)
  expect(call).toThrow(new RegExp(`^${name}: fn must be a function, got `))
})
