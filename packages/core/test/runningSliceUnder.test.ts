import { Deadline, ManualClock, runningSlice } from '@hourglass/core'
import { expect, it } from 'vitest'

// A plan made on a deadline under the one asked about (a budget on trial,
// `d.child(100, { observe: true })`, or a cap of the route's own) was not
// seen: a server's timeout answer said `"slice":null` while its step ran.
it("names the running slice of the last plan made under the deadline, after the deadline's own", () => {
  const clock = new ManualClock()
  const request = Deadline.after(1000, { clock })
  const trial = request.child(100, { observe: true })
  const plan = trial.plan({ parse: 1, model: 1 }, { reserveMs: 0 })
  expect(runningSlice(request)).toBeUndefined()
  const parse = plan.slice('parse')
  expect(runningSlice(request)).toBe('parse')
  expect(runningSlice(trial)).toBe('parse')
  parse.dispose()
  expect(runningSlice(request)).toBeUndefined()
  // A plan made on the deadline itself comes first.
  const own = request.plan({ fetch: 1 }, { reserveMs: 0 })
  plan.slice('model')
  expect(runningSlice(request)).toBe('model')
  own.slice('fetch')
  expect(runningSlice(request)).toBe('fetch')
})
