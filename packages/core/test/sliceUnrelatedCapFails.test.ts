import { coreChannels, Deadline, guard, ManualClock, type SliceEndMessage } from '@hourglass/core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

const ends: SliceEndMessage[] = []
const onEnd = (m: unknown) => ends.push(m as SliceEndMessage)
beforeAll(() => coreChannels.sliceEnd.subscribe(onEnd))
afterAll(() => coreChannels.sliceEnd.unsubscribe(onEnd))
afterEach(() => {
  ends.length = 0
})

/**
 * A step that fails with a deadline error of a cap of its own (not the
 * slice's line) is passed through unrenamed, but the slice was still
 * reported `exceeded`: a slice that ran out with most of its time left.
 */
describe('a step failing with its own cap', () => {
  it('ends the slice as failed, not exceeded', async () => {
    const clock = new ManualClock()
    const plan = Deadline.after(2000, { clock }).plan({ model: 1 }, { reserveMs: 0 })
    const cap = Deadline.after(20, { clock })
    const run = plan.run('model', () => guard(new Promise(() => {}), { deadline: cap }))
    clock.advance(20)
    await expect(run).rejects.toBe(cap.reason)
    expect(plan.report()[0]?.outcome).toBe('failed')
    expect(ends.map((m) => m.outcome)).toEqual(['failed'])
  })

  it('still ends it as exceeded when the slice runs out', async () => {
    const clock = new ManualClock()
    const plan = Deadline.after(100, { clock }).plan({ model: 1 }, { reserveMs: 0 })
    const run = plan.run('model', () => new Promise(() => {}))
    clock.advance(100)
    await expect(run).rejects.toThrow(/model/)
    expect(plan.report()[0]?.outcome).toBe('exceeded')
  })

  it('and as exceeded for a guard on the slice that gave up first', async () => {
    const clock = new ManualClock()
    const plan = Deadline.after(100, { clock }).plan({ model: 1 }, { reserveMs: 0 })
    let started: () => void = () => {}
    const running = new Promise<void>((resolve) => {
      started = resolve
    })
    const run = plan.run('model', (_signal, slice) => {
      const guarded = guard(new Promise(() => {}), { deadline: slice.child(30) })
      started()
      return guarded
    })
    await running
    clock.advance(30)
    await expect(run).rejects.toThrow(/model/)
    expect(plan.report()[0]?.outcome).toBe('exceeded')
  })
})
