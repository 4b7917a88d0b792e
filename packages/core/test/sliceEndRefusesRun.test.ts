import { Deadline, isDeadlineExceeded, ManualClock, SliceEndedByRunError } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/**
 * `end(name)` is for a slice started with `slice()`. Given a slice `run`
 * started, it disposed the slice: while the step was pending, `run` then
 * never rejected — not at the slice's time, not even at the plan's
 * deadline (a disposed deadline no longer hears its parent's end) — and the
 * slice read `ok`; after the step, what the step left running under the
 * slice's signal no longer stopped with the plan's deadline.
 */
describe('plan.end on a slice run started', () => {
  it('is refused while its step is pending, and run still rejects when the slice runs out', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(1000, { clock })
    const plan = deadline.plan({ model: 1, write: 1 }, { reserveMs: 0 })
    const run = plan.run('model', () => new Promise(() => {}))
    const settled = run.catch((e: unknown) => e)
    await Promise.resolve()
    expect(() => plan.end('model')).toThrow(SliceEndedByRunError)
    expect(() => plan.end('model')).toThrow(/run\(\)/)
    expect(plan.report()[0]?.outcome).toBe('running')
    clock.advance(500)
    const error = await settled
    expect(isDeadlineExceeded(error)).toBe(true)
    expect((error as { slice?: string }).slice).toBe('model')
    expect(plan.report()[0]?.outcome).toBe('exceeded')
  })

  it('leaves a settled step’s slice following the plan’s deadline', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(1000, { clock })
    const plan = deadline.plan({ model: 1 }, { reserveMs: 0 })
    let left: AbortSignal | undefined
    await plan.run('model', (signal) => {
      left = signal
      return Promise.any([Promise.resolve('fast'), new Promise<string>(() => {})])
    })
    plan.end('model')
    expect(plan.report()[0]?.outcome).toBe('ok')
    clock.advance(1000)
    expect(left?.aborted).toBe(true)
    expect(left?.reason).toBe(deadline.reason)
  })
})
