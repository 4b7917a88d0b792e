import { Deadline, ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'

/**
 * A plan's slice names are the caller's own (a misspelt one is refused by
 * `run`, UNKNOWN_SLICE, naming the known ones), but its option and a fixed
 * slice's key are not: `{ reserveMS: 0 }` was ignored and every slice still
 * lost the default 10 ms; `{ ms: 50, max: 80 }` read as a bound that does
 * not exist. Refused when the plan is made, as every factory's options are.
 */
it('refuses an unknown plan option, naming the one probably meant', () => {
  const d = Deadline.after(1000, { clock: new ManualClock() })
  expect(() => d.plan({ model: 1 }, { reserveMS: 0 } as never)).toThrow(
    new TypeError('unknown option "reserveMS" (did you mean reserveMs?); plan() takes reserveMs'),
  )
  // The option as spelt works: the slice gets everything.
  expect(d.plan({ model: 1 }, { reserveMs: 0 }).allotment('model')).toBe(1000)
  // Null and no options still read as none.
  expect(d.plan({ model: 1 }, null as never).allotment('model')).toBe(990)
  d.dispose()
})

it('refuses a fixed slice with a key besides ms, naming the slice', () => {
  const d = Deadline.after(1000, { clock: new ManualClock() })
  expect(() => d.plan({ write: { ms: 50, max: 80 } as never })).toThrow(
    new TypeError('unknown key "max"; slice "write" takes ms'),
  )
  // A misspelt ms, with no ms beside it, is named as meant.
  expect(() => d.plan({ write: { MS: 50 } as never })).toThrow(
    new TypeError('unknown key "MS" (did you mean ms?); slice "write" takes ms'),
  )
  expect(d.plan({ write: { ms: 50 } }).allotment('write')).toBe(50)
  d.dispose()
})
