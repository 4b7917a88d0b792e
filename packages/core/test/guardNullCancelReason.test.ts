import { Deadline, guard, ManualClock, untilEnded, wait } from '@hourglass/core'
import { expect, it } from 'vitest'

// `cancel(null)` makes `null` the reason, as `AbortController.abort(null)`
// makes `signal.reason` null. wait, untilEnded, plan.run and guard on a
// deadline already cancelled rejected with that null; guard waiting on work
// when the cancel came rejected with a fresh AbortError instead (p-timeout
// replaces a nullish signal reason with one of its own).

it('rejects with a null cancel reason that comes while the work is pending', async () => {
  const clock = new ManualClock()
  const deadline = Deadline.after(1000, { clock })
  let cancelled = 0
  const work = Object.assign(new Promise(() => {}), { cancel: () => cancelled++ })
  const guarded = guard(work, { deadline })
  deadline.cancel(null)
  expect(deadline.signal.reason).toBe(null)
  await expect(guarded).rejects.toBe(null)
  expect(cancelled).toBe(1)
  expect(clock.pendingTimers).toBe(0)
})

it('rejects as wait and untilEnded do, and as it does on a deadline already cancelled', async () => {
  const deadline = Deadline.after(1000, { clock: new ManualClock() })
  const pending = [
    guard(new Promise(() => {}), { deadline }),
    wait(500, { deadline }),
    untilEnded(new Promise(() => {}), { deadline }),
  ]
  deadline.cancel(null)
  const reasons = await Promise.all(
    pending.map((p) =>
      p.then(
        () => 'resolved',
        (e: unknown) => e,
      ),
    ),
  )
  const afterwards = await guard(async () => 1, { deadline }).then(
    () => 'resolved',
    (e: unknown) => e,
  )
  expect([...reasons, afterwards]).toEqual([null, null, null, null])
})

it('still answers other cancel reasons and the expiry as before', async () => {
  const clock = new ManualClock()
  const cancelledOne = Deadline.after(1000, { clock })
  const reason = new Error('client left')
  const guarded = guard(new Promise(() => {}), { deadline: cancelledOne })
  cancelledOne.cancel(reason)
  await expect(guarded).rejects.toBe(reason)

  const expiring = Deadline.after(100, { clock, name: 'model' })
  const timedOut = guard(new Promise(() => {}), { deadline: expiring })
  clock.advance(100)
  await expect(timedOut).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED', slice: 'model' })
  expect(clock.pendingTimers).toBe(0)
})

it('still resolves with work that finished just before the cancel, as before', async () => {
  const deadline = Deadline.after(1000, { clock: new ManualClock() })
  const work = Promise.resolve('done')
  const guarded = guard(work, { deadline })
  // Registered after guard's own reaction: the work has settled when it runs.
  void work.then(() => deadline.cancel(null))
  await expect(guarded).resolves.toBe('done')
})
