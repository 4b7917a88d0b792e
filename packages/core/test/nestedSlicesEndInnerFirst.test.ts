import { coreChannels, Deadline, ManualClock, type SliceEndMessage } from '@hourglass/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

/**
 * A plan made inside a slice (`slice.plan(…)`: a step split into steps of its
 * own) whose slice ends with the outer one — both run out at the same
 * instant, or the request is cancelled — publishes the inner slice's end
 * first. Before, the outer slice's end came first: its signal is aborted
 * before its children's, so its `run` settled first, and a tracer ending
 * spans on `sliceEnd` showed a child span ending after its parent.
 */
describe('nested slices that end together: the inner one ends first', () => {
  const ends: string[] = []
  const listener = (message: unknown) => ends.push((message as SliceEndMessage).slice)
  beforeEach(() => {
    ends.length = 0
    coreChannels.sliceEnd.subscribe(listener)
  })
  afterEach(() => coreChannels.sliceEnd.unsubscribe(listener))

  /** outer ⊃ middle ⊃ inner, each given all its parent has: all end together. */
  async function nest(request: Deadline): Promise<{ outcome: Promise<unknown> }> {
    let started: () => void = () => {}
    const innermost = new Promise<void>((resolve) => {
      started = resolve
    })
    const step = () => {
      started()
      return new Promise<never>(() => {})
    }
    const outcome = request
      .plan({ outer: 1 }, { reserveMs: 0 })
      .run('outer', (_s, outer) =>
        outer
          .plan({ middle: 1 }, { reserveMs: 0 })
          .run('middle', (_t, middle) =>
            middle.plan({ inner: 1 }, { reserveMs: 0 }).run('inner', step),
          ),
      )
      .catch((error: unknown) => error)
    await innermost
    return { outcome } // not the promise itself: an async function would wait for it
  }

  it('run: when their time runs out', async () => {
    const clock = new ManualClock()
    const request = Deadline.after(100, { clock })
    const { outcome } = await nest(request)
    clock.advance(100)
    await outcome
    await new Promise((resolve) => setImmediate(resolve))
    expect(ends).toEqual(['inner', 'middle', 'outer'])
  })

  it('run: when the request is cancelled', async () => {
    const clock = new ManualClock()
    const request = Deadline.after(100, { clock })
    const { outcome } = await nest(request)
    request.cancel(new Error('caller left'))
    await outcome
    await new Promise((resolve) => setImmediate(resolve))
    expect(ends).toEqual(['inner', 'middle', 'outer'])
  })

  it('run: each end as its own run would publish it', async () => {
    const messages: SliceEndMessage[] = []
    const keep = (message: unknown) => messages.push(message as SliceEndMessage)
    coreChannels.sliceEnd.subscribe(keep)
    try {
      const clock = new ManualClock()
      const { outcome } = await nest(Deadline.after(100, { clock }))
      clock.advance(100)
      await outcome
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      coreChannels.sliceEnd.unsubscribe(keep)
    }
    expect(
      messages.map((m) => [m.slice, m.outcome, m.usedMs, (m.error as { slice?: string }).slice]),
    ).toEqual([
      ['inner', 'exceeded', 100, 'inner'],
      ['middle', 'exceeded', 100, 'middle'],
      ['outer', 'exceeded', 100, 'outer'],
    ])
  })

  it('slice(): disposing the outer slice after both ran out', () => {
    const clock = new ManualClock()
    const request = Deadline.after(100, { clock })
    const outer = request.plan({ outer: 1 }, { reserveMs: 0 }).slice('outer')
    const inner = outer.plan({ inner: 1 }, { reserveMs: 0 }).slice('inner')
    clock.advance(100)
    outer.dispose()
    inner.dispose()
    expect(ends).toEqual(['inner', 'outer'])
  })

  it('an inner slice still live when the outer one ends is left to end on its own', () => {
    const clock = new ManualClock()
    const request = Deadline.after(100, { clock })
    const outer = request.plan({ outer: 1 }, { reserveMs: 0 }).slice('outer')
    const inner = outer.plan({ inner: 1 }, { reserveMs: 0 }).slice('inner')
    outer.dispose() // disposed, not ended: the inner one runs on
    expect(ends).toEqual(['outer'])
    inner.dispose()
    expect(ends).toEqual(['outer', 'inner'])
  })
})
