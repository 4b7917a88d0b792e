import {
  currentDeadline,
  Deadline,
  ManualClock,
  remainingMs,
  runWithDeadline,
} from '@hourglass/core'
import { describe, expect, expectTypeOf, it } from 'vitest'

// The README (guard): "run it under runWithDeadline(undefined, …) to hide
// that". Typed `Deadline` alone, that call did not compile (llm wrote
// `undefined as unknown as Deadline`), and `null` became the current
// deadline: currentDeadline(), typed `Deadline | undefined`, returned null,
// which code testing `!== undefined` then read as a deadline.
describe('runWithDeadline with no deadline hides the one it runs under', () => {
  const outer = Deadline.after(1000, { clock: new ManualClock() })

  it.each([undefined, null])(
    '%s: currentDeadline() is undefined inside, after awaits too',
    async (none) => {
      expectTypeOf(runWithDeadline).parameter(0).toEqualTypeOf<Deadline | null | undefined>()
      const seen = await runWithDeadline(outer, () =>
        runWithDeadline(none, async () => {
          const before = currentDeadline()
          await new Promise((resolve) => setImmediate(resolve))
          return [before, currentDeadline(), remainingMs()]
        }),
      )
      expect(seen).toEqual([undefined, undefined, Number.POSITIVE_INFINITY])
      expect(runWithDeadline(outer, () => currentDeadline())).toBe(outer)
    },
  )
})
