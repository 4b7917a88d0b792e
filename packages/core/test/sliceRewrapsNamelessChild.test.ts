import { Deadline, type DeadlineExceededError, guard, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve()
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))
}

/** Resolves once the step has made its own child. */
function started(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {}
  const promise = new Promise<void>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

/**
 * A step's own nameless timeout (`slice.child(50)`): its error thrown out of
 * the step is the slice's to report:
 * `run` (and `guard` bounding by the slice) reject with the slice's budget,
 * the child's error as `cause` — as `report()` says (allotted 1000 ms), not
 * with the child's 50 ms and no cause.
 */
describe('a nameless child’s deadline error thrown out of its slice', () => {
  const detail = (error: DeadlineExceededError, call: Deadline) => ({
    budgetMs: error.budgetMs,
    cause: error.cause === call.reason,
    message: error.message,
  })

  it('is re-wrapped by run with the slice’s budget, the child’s error as cause', async () => {
    const clock = new ManualClock()
    const plan = Deadline.after(1000, { clock }).plan({ model: 1 }, { reserveMs: 0 })
    let call: Deadline | undefined
    const made = started()
    const running = plan.run('model', async (_s, slice) => {
      call = slice.child(50)
      made.resolve()
      await aborted(call.signal)
      throw call.reason
    })
    await made.promise
    clock.advance(50)
    const error = (await running.catch((e: unknown) => e)) as DeadlineExceededError
    expect(detail(error, call as Deadline)).toEqual({
      budgetMs: 1000,
      cause: true,
      message: 'deadline exceeded in slice "model": 50 ms elapsed of a 1000 ms budget',
    })
    expect(plan.report()).toMatchObject([{ name: 'model', allottedMs: 1000, outcome: 'exceeded' }])
  })

  it('is re-wrapped by guard bounding by the slice', async () => {
    const clock = new ManualClock()
    const slice = Deadline.after(1000, { clock, name: 'model' })
    const call = slice.child(50)
    const guarded = guard(
      aborted(call.signal).then(() => {
        throw call.reason
      }),
      { deadline: slice },
    )
    clock.advance(50)
    const error = (await guarded.catch((e: unknown) => e)) as DeadlineExceededError
    expect(detail(error, call)).toEqual({
      budgetMs: 1000,
      cause: true,
      message: 'deadline exceeded in slice "model": 50 ms elapsed of a 1000 ms budget',
    })
  })

  it('is the slice’s own error, not re-wrapped, when the slice itself ran out', async () => {
    const clock = new ManualClock()
    const plan = Deadline.after(100, { clock }).plan({ model: 1 }, { reserveMs: 0 })
    let slice: Deadline | undefined
    const made = started()
    const running = plan.run('model', (_s, s) => {
      slice = s
      made.resolve()
      return new Promise(() => {})
    })
    await made.promise
    clock.advance(100)
    const error = await running.catch((e: unknown) => e)
    expect(error).toBe((slice as Deadline).reason)
  })

  it('an explicitly named step inside the slice keeps its own error', async () => {
    const clock = new ManualClock()
    const plan = Deadline.after(1000, { clock }).plan({ model: 1 }, { reserveMs: 0 })
    let call: Deadline | undefined
    const made = started()
    const running = plan.run('model', async (_s, slice) => {
      call = slice.child(50, { name: 'tokenize' })
      made.resolve()
      await aborted(call.signal)
      throw call.reason
    })
    await made.promise
    clock.advance(50)
    expect(await running.catch((e: unknown) => e)).toBe((call as Deadline).reason)
  })
})
