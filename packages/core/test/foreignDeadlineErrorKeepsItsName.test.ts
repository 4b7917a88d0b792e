import { Deadline, type DeadlineExceededError, guard, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/**
 * `guard` and `plan.run` report their own deadline's expiry under their
 * slice's name. A deadline error of an unrelated deadline inside the work —
 * a 20 ms cap of the step's own on a call that hangs — is not that expiry:
 * renamed, a request with most of its time left was answered 504 naming the
 * slice ("model"), as if the slice had run out.
 */
describe('a deadline error of an unrelated deadline', () => {
  it('passes through plan.run as it is, not as the slice’s', async () => {
    const clock = new ManualClock()
    const plan = Deadline.after(2000, { clock }).plan({ cache: 0.1, model: 0.9 })
    let ready = () => {}
    const started = new Promise<void>((r) => {
      ready = r
    })
    const running = plan.run('model', () => {
      const cap = Deadline.after(20, { clock })
      ready()
      return guard(new Promise(() => {}), { deadline: cap })
    })
    await started
    clock.advance(20)
    const error = (await running.catch((e: unknown) => e)) as DeadlineExceededError
    expect({ slice: error.slice, budgetMs: error.budgetMs, message: error.message }).toEqual({
      slice: undefined,
      budgetMs: 20,
      message: 'deadline exceeded: 20 ms elapsed of a 20 ms budget',
    })
  })

  it('passes through guard as it is, not as the guard’s deadline’s', async () => {
    const clock = new ManualClock()
    const outer = Deadline.after(1000, { clock, name: 'outer' })
    const inner = Deadline.after(5, { clock, name: 'cache' })
    const guarded = guard(new Promise((_, reject) => inner.onDone(reject)), { deadline: outer })
    clock.advance(5)
    expect(await guarded.catch((e: unknown) => e)).toBe(inner.reason)
  })

  it('while the guard’s own deadline’s expiry is still reported under its slice', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(10, { clock, name: 'request' })
    const guarded = guard(new Promise((_, reject) => deadline.onDone(reject)), {
      deadline,
      slice: 'lookup',
    })
    clock.advance(10)
    const error = (await guarded.catch((e: unknown) => e)) as DeadlineExceededError
    expect(error.slice).toBe('lookup')
    expect(error.cause).toBe(deadline.reason)
  })
})
