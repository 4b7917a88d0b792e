import { Deadline, isDeadlineExceeded, wait } from '@hourglass/core'
import { expect, it } from 'vitest'
import { drive, pause, WaitClock } from './support/waitClock.js'

// `drive` (the suite's driver of time on a WaitClock) moves the clock by
// `next - now`, which the clock adds back to its `now`: from 0.2 to 0.9 that
// lands on 0.8999999999999999, a float step short. Once a ManualClock fired
// fractional waits at their very end (no longer rounded up to a whole ms),
// both works below hung there, each until the test's timeout.

it('drive ends two fractional waits, the clock on the later one', { timeout: 5000 }, async () => {
  const clock = new WaitClock()
  const settled = await drive(clock, [wait(0.9, { clock }), wait(0.2, { clock })])
  expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled'])
  expect(clock.now()).toBe(0.9)
})

it('drive reaches a deadline whose child timer lands a float step short of it', {
  timeout: 5000,
}, async () => {
  const clock = new WaitClock()
  const parent = Deadline.after(0.9, { clock })
  const work = (async () => {
    await wait(0.2, { deadline: parent })
    // Its own timer, armed for 0.9 − 0.2, is due a float step before 0.9:
    // it fires, re-arms for that step, and changes no wait.
    const child = parent.child(Number.POSITIVE_INFINITY)
    await wait(10, { deadline: child })
  })()
  const [settled] = await drive(clock, [work])
  expect(settled?.status).toBe('rejected')
  expect(isDeadlineExceeded((settled as PromiseRejectedResult).reason)).toBe(true)
  expect(clock.now()).toBe(0.9)
})

// Moving on to the next timer after one fired, not a wait, jumped the clock
// while the work did loopback I/O: a fallback's call after a headers timeout
// read 1850 ms of latency, and a deadline expired under it.
it('drive does not move the clock after a timer fired while the work does I/O', {
  timeout: 5000,
}, async () => {
  const clock = new WaitClock()
  const work = (async () => {
    const deadline = Deadline.after(100, { clock })
    void pause(clock, 1000) // a fake server's answer, held 1 s
    await new Promise<void>((resolve) =>
      deadline.signal.addEventListener('abort', () => resolve(), { once: true }),
    )
    // The abort reaching the socket: two turns of the loop, no time on the clock.
    await new Promise((resolve) => setImmediate(resolve))
    await new Promise((resolve) => setImmediate(resolve))
    return clock.now()
  })()
  const [settled] = await drive(clock, [work])
  expect((settled as PromiseFulfilledResult<number>).value).toBe(100)
})
