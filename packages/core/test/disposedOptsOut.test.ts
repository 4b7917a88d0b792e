import { Deadline, guard, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/** A promise settled by hand: work that finishes when the test says so. */
function pending<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve: (value: T) => void = () => {}
  const promise = new Promise<T>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

/**
 * README: a deadline disposed while live never expires (`wait`, `untilEnded`
 * and `throwIfExpired` already treat it so). A handler disposes
 * `req.deadline` to opt out of it (a long export): `guard`, `plan.run` and
 * a child made after the dispose still enforced the old expiry — a 504 with
 * the slice's name for a request that had opted out.
 */
describe('a deadline disposed to opt out of its expiry', () => {
  it('guard does not end the work at the old expiry', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(50, { clock })
    deadline.dispose()
    const work = pending<string>()
    const guarded = guard(work.promise, { deadline })
    clock.advance(100)
    work.resolve('done')
    await expect(guarded).resolves.toBe('done')
    // Past its old expiry when guard starts: not refused at once either.
    await expect(guard(Promise.resolve('late'), { deadline })).resolves.toBe('late')
  })

  it('guard stops enforcing a deadline disposed while it waited; a cancel still ends it', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(50, { clock })
    const work = pending<string>()
    const guarded = guard(work.promise, { deadline })
    deadline.dispose()
    clock.advance(100)
    work.resolve('done')
    await expect(guarded).resolves.toBe('done')

    const other = Deadline.after(50, { clock })
    other.dispose()
    const cancelled = guard(new Promise(() => {}), { deadline: other })
    const reason = new Error('client left')
    other.cancel(reason)
    await expect(cancelled).rejects.toBe(reason)
  })

  it('plan.run: share slices are not allotted from the old expiry; fixed slices keep their ms', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(50, { clock })
    deadline.dispose()
    const plan = deadline.plan({ model: 1, cache: { ms: 30 } }, { reserveMs: 0 })
    const work = pending<string>()
    const running = plan.run('model', () => work.promise)
    clock.advance(100)
    work.resolve('done')
    await expect(running).resolves.toBe('done')
    // A fixed slice is the step's own cap, not a share of the deadline: still enforced.
    const capped = plan.run('cache', () => new Promise(() => {}))
    clock.advance(30)
    const error = await capped.catch((e: unknown) => e)
    expect(isDeadlineExceeded(error) && error.slice).toBe('cache')
    expect(plan.report().map((r) => [r.name, r.outcome])).toEqual([
      ['model', 'ok'],
      ['cache', 'exceeded'],
    ])
  })

  it('a child made after the dispose takes only its own expiry, and is still cancelled with it', () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(50, { clock })
    const before = deadline.child(Number.POSITIVE_INFINITY, { name: 'before' })
    deadline.dispose()
    const after = deadline.child(1000, { name: 'after' })
    const unbounded = deadline.child()
    expect(after.budgetMs).toBe(1000)
    clock.advance(100)
    // Made before the dispose: it keeps the expiry it was given (README).
    expect(before.done).toBe(true)
    expect(after.expired).toBe(false)
    expect(after.signal.aborted).toBe(false)
    expect(unbounded.done).toBe(false)
    const reason = new Error('client left')
    deadline.cancel(reason)
    expect(after.reason).toBe(reason)
    expect(unbounded.reason).toBe(reason)
  })
})
