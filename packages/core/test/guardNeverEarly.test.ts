import { type Clock, Deadline, guard, ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'

// guard bounds work by the time left with a timer of its own. Real timers can
// fire before the clock reaches the time asked for (Node truncates a
// fractional delay, libuv counts whole ms): with `remaining()` = 3.9 ms, the
// guard's timer fired at 3 ms and it rejected with DEADLINE_EXCEEDED while
// the deadline itself still had time — 27 times in 30 on a real clock. This
// clock truncates delays as Node does, so the early firing is exact.

it('does not reject before the deadline has expired when its timer fires early', async () => {
  const manual = new ManualClock()
  const truncating: Clock = {
    now: () => manual.now(),
    setTimeout: (fn, ms) => manual.setTimeout(fn, Math.trunc(ms)),
    clearTimeout: (handle) => manual.clearTimeout(handle),
  }
  const deadline = Deadline.after(100.5, { clock: truncating })
  let outcome: unknown
  const guarded = guard(new Promise(() => {}), { deadline, slice: 'db' }).catch((error) => {
    outcome = error
  })

  manual.advance(100) // a 100.5 ms timer truncated to 100 fires here
  await new Promise((resolve) => setImmediate(resolve))
  expect(deadline.expired).toBe(false)
  expect(outcome).toBeUndefined()

  manual.advance(1)
  await guarded
  expect(deadline.expired).toBe(true)
  expect(outcome).toMatchObject({ code: 'DEADLINE_EXCEEDED', slice: 'db' })
  expect(manual.pendingTimers).toBe(0)
})
