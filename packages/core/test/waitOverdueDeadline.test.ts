import { type Clock, Deadline, untilEnded, wait } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/**
 * A clock whose time moves but whose timers have not run yet: what a busy
 * loop (a CPU-bound step before the back-off) does to a real deadline. Its
 * time has passed (`expired` reads true), its timer is still queued.
 */
function busyLoopClock(): Clock & { at: number; armed: number } {
  const clock = {
    at: 0,
    armed: 0,
    now: () => clock.at,
    setTimeout: () => {
      clock.armed++
      return {}
    },
    clearTimeout: () => {},
  }
  return clock
}

/** How `promise` stands once the microtasks queued so far have run (one turn of the loop). */
async function outcomeNow(promise: Promise<unknown>): Promise<unknown> {
  let outcome: unknown = 'pending'
  promise.then(
    (value) => {
      outcome = value
    },
    (error: unknown) => {
      outcome = error
    },
  )
  await new Promise((resolve) => setImmediate(resolve))
  return outcome
}

describe('wait on a deadline whose time passed before its timer ran', () => {
  it('wait(0) rejects with the deadline’s expiry, not "timer" (it resolved, and the retry went on)', async () => {
    const clock = busyLoopClock()
    const deadline = Deadline.after(5, { clock })
    clock.at = 20
    expect([deadline.expired, deadline.done]).toEqual([true, false])
    const outcome = await outcomeNow(wait(0, { deadline }))
    expect(outcome).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
    // The deadline's own reason, and the deadline now reads ended.
    expect([outcome === deadline.reason, deadline.done]).toEqual([true, true])
  })

  it('a longer wait rejects at once too, arming no timer of its own', async () => {
    const clock = busyLoopClock()
    const deadline = Deadline.after(5, { clock })
    const armedByDeadline = clock.armed
    clock.at = 20
    expect(await outcomeNow(wait(100, { deadline }))).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
    expect(clock.armed).toBe(armedByDeadline)
  })

  it('untilEnded rejects at once as well', async () => {
    const clock = busyLoopClock()
    const deadline = Deadline.after(5, { clock })
    clock.at = 20
    expect(await outcomeNow(untilEnded(new Promise(() => {}), { deadline }))).toMatchObject({
      code: 'DEADLINE_EXCEEDED',
    })
  })

  it('an observe-only child of an enforcing parent past its time: ended with the parent, as at its timer', async () => {
    const clock = busyLoopClock()
    const parent = Deadline.after(5, { clock })
    const trial = parent.child(100, { observe: true })
    clock.at = 20
    const outcome = await outcomeNow(wait(0, { deadline: trial }))
    expect(outcome).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
    expect([outcome === parent.reason, trial.done]).toEqual([true, true])
  })

  it('an observe-only or disposed deadline still never ends it', async () => {
    const clock = busyLoopClock()
    const observed = Deadline.after(5, { clock, observe: true })
    const disposed = Deadline.after(5, { clock })
    disposed.dispose()
    clock.at = 20
    await expect(wait(0, { deadline: observed })).resolves.toBe('timer')
    await expect(wait(0, { deadline: disposed })).resolves.toBe('timer')
  })
})

describe('a deadline disposed after its time passed, before its late timer ran (review)', () => {
  it('ends no wait and gets no onExpire: the request is over', async () => {
    const clock = busyLoopClock()
    let expired = 0
    const deadline = Deadline.after(100, {
      clock,
      onExpire: () => {
        expired++
      },
    })
    clock.at = 200
    deadline.dispose()
    expect(await outcomeNow(wait(0, { deadline }))).toBe('timer')
    expect(() => deadline.throwIfExpired()).not.toThrow()
    expect(expired).toBe(0)
    expect(deadline.done).toBe(false)
  })
})
