import { MAX_TIMER_MS, systemClock } from '@hourglass/core'
import { afterEach, expect, it, vi } from 'vitest'

// systemClock.setTimeout clamped a negative delay to 0 but passed NaN (and
// undefined) through: Node 20 fires such a timer after 1 ms, as it would 0,
// but Node ≥ 23 also prints a TimeoutNaNWarning (nodejs/node#46678) for
// every one. A delay that is not a number above 0 is due at once, as
// ManualClock has it; Node is handed 0.

afterEach(() => {
  vi.restoreAllMocks()
})

it.each([
  ['NaN', Number.NaN, 0],
  ['undefined', undefined, 0],
  ['negative', -5, 0],
  ['0', 0, 0],
  ['12.5', 12.5, 12.5],
  ['Infinity', Number.POSITIVE_INFINITY, MAX_TIMER_MS],
])('a delay of %s reaches Node as the delay it means', (_name, ms, expected) => {
  const spy = vi.spyOn(globalThis, 'setTimeout')
  const handle = systemClock.setTimeout(() => {}, ms as number)
  systemClock.clearTimeout(handle)
  expect(spy).toHaveBeenCalledTimes(1)
  expect(spy.mock.calls[0]?.[1]).toBe(expected)
})
