import { Deadline, type DeadlineExceededError, guard, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/**
 * A step's own shorter budget inside its slice (`slice.child(ms)`, a
 * per-call timeout) is made without a name. Its expiry is the slice's time
 * running out where the step spent it: the error names the slice, not
 * `undefined` (a 504 reading `"slice": null`, an error that said only
 * "deadline exceeded").
 */
describe('a deadline made without a name under a named one', () => {
  const reasonOf = (deadline: Deadline) => deadline.reason as DeadlineExceededError

  it('takes the slice name when it runs out first', () => {
    const clock = new ManualClock()
    const plan = Deadline.after(1000, { clock }).plan({ model: 1 }, { reserveMs: 0 })
    const slice = plan.slice('model')
    const call = slice.child(50)
    clock.advance(50)
    expect(call.name).toBe('model')
    expect(reasonOf(call).slice).toBe('model')
    expect(reasonOf(call).message).toBe(
      'deadline exceeded in slice "model": 50 ms elapsed of a 50 ms budget',
    )
  })

  it('takes the nearest named ancestor’s name, levels down', () => {
    const clock = new ManualClock()
    const slice = Deadline.after(1000, { clock })
      .plan({ model: 1 }, { reserveMs: 0 })
      .slice('model')
    const grandchild = slice.child(100).child(30)
    const named = slice.child(100, { name: 'tokenize' }).child(20)
    clock.advance(30)
    expect(reasonOf(grandchild).slice).toBe('model')
    expect(reasonOf(named).slice).toBe('tokenize')
  })

  it('is expired with its slice, named after it', () => {
    const clock = new ManualClock()
    const slice = Deadline.after(100, { clock, name: 'model' })
    const call = slice.child()
    clock.advance(100)
    expect(reasonOf(slice).slice).toBe('model')
    expect(reasonOf(call).slice).toBe('model')
  })

  it('keeps no name under a deadline that has none', () => {
    const clock = new ManualClock()
    const call = Deadline.after(100, { clock }).child(10)
    clock.advance(10)
    expect(call.name).toBeUndefined()
    expect(reasonOf(call).slice).toBeUndefined()
  })

  it('names the slice in guard’s error', async () => {
    const clock = new ManualClock()
    const slice = Deadline.after(1000, { clock, name: 'model' })
    const guarded = guard(new Promise(() => {}), { deadline: slice.child(20) })
    clock.advance(20)
    await expect(guarded).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED', slice: 'model' })
  })
})
