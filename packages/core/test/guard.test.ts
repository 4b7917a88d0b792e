import { Deadline, guard, ManualClock, runWithDeadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

describe('guard', () => {
  it('rejects with DeadlineExceededError naming the slice when the time runs out, and cancels the work', async () => {
    const c = new ManualClock()
    const deadline = Deadline.after(100, { clock: c })
    let cancelled = 0
    const work = Object.assign(new Promise<string>(() => {}), { cancel: () => cancelled++ })
    const guarded = guard(work, { deadline, slice: 'dns' })
    c.advance(100)
    await expect(guarded).rejects.toMatchObject({
      code: 'DEADLINE_EXCEEDED',
      slice: 'dns',
      budgetMs: 100,
      elapsedMs: 100,
    })
    expect(cancelled).toBe(1)
    expect(c.pendingTimers).toBe(0)
  })

  it('passes the value through and leaves no timer behind', async () => {
    const c = new ManualClock()
    const deadline = Deadline.after(100, { clock: c })
    await expect(guard(Promise.resolve(7), { deadline })).resolves.toBe(7)
    deadline.dispose()
    expect(c.pendingTimers).toBe(0)
  })

  it('rejects with the cancel reason when the deadline is cancelled', async () => {
    const deadline = Deadline.after(10_000)
    const guarded = guard(new Promise(() => {}), { deadline })
    deadline.cancel(new Error('client left'))
    await expect(guarded).rejects.toThrow('client left')
  })

  it('fails at once when no time is left, without waiting', async () => {
    const c = new ManualClock()
    const deadline = Deadline.after(5, { clock: c })
    c.advance(5)
    await expect(guard(() => new Promise(() => {}), { deadline })).rejects.toMatchObject({
      code: 'DEADLINE_EXCEEDED',
    })
  })

  it('uses the current deadline, and turns a synchronous throw into a rejection', async () => {
    const c = new ManualClock()
    const deadline = Deadline.after(50, { clock: c, name: 'parse' })
    const guarded = runWithDeadline(deadline, () => guard(new Promise(() => {})))
    c.advance(50)
    await expect(guarded).rejects.toMatchObject({ slice: 'parse' })
    await expect(
      guard(() => {
        throw new Error('sync')
      }),
    ).rejects.toThrow('sync')
  })

  it('does not cut observe-only deadlines', async () => {
    const c = new ManualClock()
    const deadline = Deadline.after(5, { clock: c, observe: true })
    let resolve!: (v: number) => void
    const guarded = guard(
      new Promise<number>((r) => {
        resolve = r
      }),
      { deadline },
    )
    c.advance(10)
    resolve(1)
    await expect(guarded).resolves.toBe(1)
  })
})

describe('a clock whose setTimeout returns no handle (its type allows it)', () => {
  it('work that finished is never cancelled when the deadline’s time comes later', async () => {
    const manual = new ManualClock()
    const handleless = {
      now: () => manual.now(),
      setTimeout: (callback: () => void, ms: number) => {
        manual.setTimeout(callback, ms)
        return undefined
      },
      clearTimeout: () => {},
    }
    const deadline = Deadline.after(100, { clock: handleless })
    let cancelled = 0
    const work = Object.assign(Promise.resolve('done'), { cancel: () => cancelled++ })
    await expect(guard(work, { deadline, slice: 'parse' })).resolves.toBe('done')
    manual.advance(100)
    expect(cancelled).toBe(0)
  })
})

/**
 * The deadline's abort and guard's own timer both end the wait, and may come
 * in one stretch with no microtask between them: each called the work's
 * `cancel()`, which need not be idempotent.
 */
describe("guard calls the work's cancel() once, whatever the order of events", () => {
  /** A work that never settles and counts its cancels. */
  function cancellable() {
    const work = Object.assign(new Promise<never>(() => {}), { cancels: 0, cancel: () => {} })
    work.cancel = () => {
      work.cancels++
    }
    return work
  }

  it('the deadline and guard’s timer due at the same instant, fired back to back by advance()', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(50, { clock })
    const work = cancellable()
    const guarded = guard(work, { deadline, slice: 'x' })
    clock.advance(50)
    await expect(guarded).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED', slice: 'x' })
    expect(work.cancels).toBe(1)
    expect(clock.pendingTimers).toBe(0)
  })

  it('a cancel of the deadline, then guard’s timer falling due before any microtask ran', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(50, { clock })
    const work = cancellable()
    const guarded = guard(work, { deadline })
    deadline.cancel(new Error('client left'))
    clock.advance(50)
    await expect(guarded).rejects.toThrow('client left')
    expect(work.cancels).toBe(1)
  })
})
