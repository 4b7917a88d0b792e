import { Deadline, isDeadlineExceeded, ManualClock, runningSlice } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/**
 * A step whose synchronous part runs past its slice (a CPU-bound parse of a
 * large body: the loop is busy, time passes and no timer runs) and then
 * finishes, before the slice's timer has had its turn. `run` resolved it
 * `ok` (usedMs 300 of 90 allotted), the overrun went unreported, and when
 * it had used up the whole request the next slice, allotted 0, was the one
 * named as having run out (a server's 504 said `model` for a request that
 * ran out parsing). Enforced, the slice is over: `run` rejects naming it,
 * as it does when the step's promise is still pending when the timer runs,
 * and as dark mode reports it (`observed`).
 */
describe('a step that runs past its slice before the slice timer runs', () => {
  /** The loop was busy until `ms`: time moved, no timer ran (see guardSyncPartEndsDeadline). */
  const busyUntil = (clock: ManualClock, ms: number) => {
    clock.now = () => ms
  }

  it('run rejects naming the slice, aborts its signal and reports it exceeded', async () => {
    const clock = new ManualClock()
    const plan = Deadline.after(1000, { clock }).plan({ parse: 0.2, model: 0.8 }, { reserveMs: 0 })
    let signal: AbortSignal | undefined
    const error = await plan
      .run('parse', (s) => {
        signal = s
        busyUntil(clock, 300)
        return 'parsed'
      })
      .catch((e: unknown) => e)
    expect(isDeadlineExceeded(error) && error.slice).toBe('parse')
    expect(signal?.aborted).toBe(true)
    expect(plan.report()[0]).toEqual({
      name: 'parse',
      allottedMs: 200,
      usedMs: 300,
      outcome: 'exceeded',
    })
    // The time left still flows to the next slice.
    expect(plan.allotment('model')).toBe(700)
    expect(clock.pendingTimers).toBe(1) // the plan's deadline's own
  })

  it('an async step whose last synchronous part overran is judged the same', async () => {
    const clock = new ManualClock()
    const plan = Deadline.after(1000, { clock }).plan({ parse: 1 }, { reserveMs: 0 })
    const running = plan.run('parse', async () => {
      await Promise.resolve() // the body arrived
      busyUntil(clock, 1500) // parsed it
      return 'parsed'
    })
    await expect(running).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED', slice: 'parse' })
    expect(plan.report()[0]?.outcome).toBe('exceeded')
  })

  it('names the overrunning slice, not the next one, when it used up the whole deadline', async () => {
    const clock = new ManualClock()
    const named: Array<string | undefined> = []
    const request = Deadline.after(1000, {
      clock,
      // What a server's 504 names (express reads runningSlice at its expiry).
      onExpire: (d) => named.push(runningSlice(d)),
    })
    const plan = request.plan({ parse: 0.2, model: 0.8 }, { reserveMs: 0 })
    await expect(
      plan.run('parse', () => {
        busyUntil(clock, 1200)
        return 'parsed'
      }),
    ).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED', slice: 'parse' })
    expect(named).toEqual(['parse'])
    expect(request.expired).toBe(true)
    expect(plan.report()[1]?.outcome).toBe('not-started')
  })

  it('in dark mode it resolves, observed (unchanged)', async () => {
    const clock = new ManualClock()
    const plan = Deadline.after(1000, { clock, observe: true }).plan({ parse: 1 }, { reserveMs: 0 })
    await expect(
      plan.run('parse', () => {
        busyUntil(clock, 1200)
        return 'parsed'
      }),
    ).resolves.toBe('parsed')
    expect(plan.report()[0]?.outcome).toBe('observed')
  })

  it('a step that finished within its slice stays ok', async () => {
    const clock = new ManualClock()
    const plan = Deadline.after(1000, { clock }).plan({ a: 1, b: 1 }, { reserveMs: 0 })
    await expect(
      plan.run('a', () => {
        busyUntil(clock, 499)
        return 'a'
      }),
    ).resolves.toBe('a')
    expect(plan.report()[0]?.outcome).toBe('ok')
  })

  it('a slice() disposed after its time passed, before its timer ran, ends exceeded', () => {
    const clock = new ManualClock()
    const plan = Deadline.after(1000, { clock }).plan({ parse: 0.2, model: 0.8 }, { reserveMs: 0 })
    const slice = plan.slice('parse')
    busyUntil(clock, 300)
    slice.dispose()
    expect(plan.report()[0]).toMatchObject({ outcome: 'exceeded', usedMs: 300 })
    const model = plan.slice('model')
    busyUntil(clock, 350)
    plan.end('model')
    expect(plan.report()[1]?.outcome).toBe('ok')
    expect(model.expired).toBe(false)
  })
})
