import { Deadline, guard, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/**
 * `guard(() => work())` with a deadline that has already ended called the
 * function (a paid model call, a write) and only then rejected: work nobody
 * would wait for, which `plan.run` does not start on a slice that is over.
 */
describe('guard given a function under a deadline that has ended', () => {
  it('does not call it when the deadline has expired', async () => {
    let started = 0
    const deadline = Deadline.after(0)
    const guarded = guard(
      () => {
        started++
        return 'paid result'
      },
      { deadline },
    )
    await expect(guarded).rejects.toSatisfy(isDeadlineExceeded)
    expect(started).toBe(0)
  })

  it('does not call it when the deadline was cancelled', async () => {
    let started = 0
    const deadline = Deadline.after(1000)
    const reason = new Error('client left')
    deadline.cancel(reason)
    const guarded = guard(
      () => {
        started++
        return 'paid result'
      },
      { deadline },
    )
    await expect(guarded).rejects.toBe(reason)
    expect(started).toBe(0)
  })

  it('does not call it when the time passed before the deadline timer ran', async () => {
    let started = 0
    const clock = new ManualClock()
    const deadline = Deadline.after(50, { clock })
    // The clock's time passes without its timers running: a busy loop.
    clock.now = () => 60
    const guarded = guard(
      () => {
        started++
        return 'paid result'
      },
      { deadline },
    )
    await expect(guarded).rejects.toSatisfy(isDeadlineExceeded)
    expect(started).toBe(0)
  })

  it('still calls it under an observe-only deadline whose time has passed', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(50, { clock, observe: true })
    clock.advance(60)
    await expect(guard(() => 'ran', { deadline })).resolves.toBe('ran')
  })
})
