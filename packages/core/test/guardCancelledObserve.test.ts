import { Deadline, guard, ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'

// guard calls `work.cancel()` when the deadline ends. An observe-only
// deadline (dark mode) is never ended by its expiry, but is by a cancel (the
// client left). When that cancel came before guard was called, guard
// rejected with the reason but left the work running: the abort listener it
// adds would never hear an abort that had already happened.

it('cancels the work at once for an observe-only deadline already cancelled', async () => {
  const clock = new ManualClock()
  const deadline = Deadline.after(1000, { clock, observe: true })
  deadline.cancel(new Error('client left'))
  let cancelled = 0
  const work = Object.assign(new Promise(() => {}), { cancel: () => cancelled++ })
  await expect(guard(work, { deadline })).rejects.toThrow('client left')
  expect(cancelled).toBe(1)
  expect(clock.pendingTimers).toBe(0)
})

it('still lets work run past an observe-only deadline that only expired', async () => {
  const clock = new ManualClock()
  const deadline = Deadline.after(10, { clock, observe: true })
  clock.advance(20)
  let cancelled = 0
  const work = Object.assign(Promise.resolve('done'), { cancel: () => cancelled++ })
  await expect(guard(work, { deadline })).resolves.toBe('done')
  expect(cancelled).toBe(0)
})
