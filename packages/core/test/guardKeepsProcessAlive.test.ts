import { type Clock, Deadline, guard, ManualClock, type TimerOptions } from '@hourglass/core'
import { expect, it } from 'vitest'

/**
 * guard's timer is what ends it at the deadline, and the deadline's own timer
 * is unref'd: a script awaiting guard on work that holds no handle of its own
 * (a promise on an event that never comes) exited with code 13 ("unsettled
 * top-level await") instead of rejecting with DEADLINE_EXCEEDED. Its timer
 * keeps the process alive while it waits, as `wait`'s does.
 */
function recordingClock(): {
  clock: Clock
  manual: ManualClock
  asked: (TimerOptions | undefined)[]
} {
  const manual = new ManualClock()
  const asked: (TimerOptions | undefined)[] = []
  const clock: Clock = {
    now: () => manual.now(),
    setTimeout: (callback, ms, options) => {
      asked.push(options)
      return manual.setTimeout(callback, ms)
    },
    clearTimeout: (handle) => manual.clearTimeout(handle),
  }
  return { clock, manual, asked }
}

it('guard asks its clock to keep the process alive while it waits, and clears that timer when it settles', async () => {
  const { clock, manual, asked } = recordingClock()
  const deadline = Deadline.after(200, { clock })
  const pending = guard(new Promise<never>(() => {}), { deadline })
  // The deadline's own timer first (unref'd, as documented), then guard's.
  expect(asked[0]?.keepAlive).not.toBe(true)
  expect(asked.slice(1).map((options) => options?.keepAlive)).toEqual([true])
  manual.advance(200)
  await expect(pending).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED' })
  expect(manual.pendingTimers).toBe(0)
})

it('a guard whose work finishes first leaves no timer holding the process', async () => {
  const { clock, manual } = recordingClock()
  const deadline = Deadline.after(200, { clock })
  await expect(guard(Promise.resolve('done'), { deadline })).resolves.toBe('done')
  deadline.dispose()
  expect(manual.pendingTimers).toBe(0)
})

// Past Node's timer limit (2^31-1 ms, ~24.8 days) guard armed no timer of its
// own, leaving the wait to the deadline's unref'd one: a script awaiting guard
// under `Deadline.after(30 days)` exited with code 13 at once, where one under
// 20 days waited — and `wait`, `untilEnded` and `plan.run` hold it under both.
it('a deadline past 2^31-1 ms away keeps the process alive too, and still ends the wait at its expiry', async () => {
  const DAY = 86_400_000
  const { clock, manual, asked } = recordingClock()
  const deadline = Deadline.after(30 * DAY, { clock })
  const pending = guard(new Promise<never>(() => {}), { deadline })
  expect(asked.slice(1).map((options) => options?.keepAlive)).toEqual([true])
  manual.advance(30 * DAY - 1)
  await expect(Promise.race([pending, 'pending'])).resolves.toBe('pending')
  manual.advance(1)
  await expect(pending).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED' })
  expect(manual.pendingTimers).toBe(0)
})

it('on a ManualClock a far guard waits one whole timer, not a step per 2^31-1 ms', async () => {
  const clock = new ManualClock()
  const deadline = Deadline.after(1e15, { clock })
  const pending = guard(new Promise<never>(() => {}), { deadline })
  expect(clock.pendingTimers).toBe(2) // the deadline's and guard's
  clock.advance(1e15)
  await expect(pending).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED' })
  expect(clock.pendingTimers).toBe(0)
})
