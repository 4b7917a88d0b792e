import type { SliceEndMessage } from '@hourglass/core'
import { coreChannels, Deadline, DeadlineExceededError, ManualClock } from '@hourglass/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

/**
 * A slice whose deadline is cancelled while its own time is far from up is
 * `cancelled`, also when the cancel's reason is a `DeadlineExceededError`:
 * what @hourglass/express cancels a request's deadline with once a sibling
 * slice ran out and deadlineErrors() answered 504, or once the app called
 * reportExpired(). It read `exceeded` — allotted 1000 ms, used 200 — and a
 * tracer marked a step that still had 800 ms as the one that ran out (one
 * 504, two `hourglass.deadline.exceeded`). A slice whose own time did pass
 * is still `exceeded`.
 */
describe('a slice cancelled with a deadline error before its time', () => {
  let ends: string[] = []
  const onEnd = (m: SliceEndMessage) => ends.push(`${m.slice}=${m.outcome}`)
  beforeEach(() => {
    ends = []
    coreChannels.sliceEnd.subscribe(onEnd)
  })
  afterEach(() => {
    coreChannels.sliceEnd.unsubscribe(onEnd)
  })

  it('is cancelled, by run() and by slice(); the sibling that ran out stays exceeded', async () => {
    const clock = new ManualClock()
    const request = Deadline.after(1000, { clock })
    const plan = request.plan({ search: 0.2, model: 0.8, log: 1 }, { reserveMs: 0 })
    const search = plan.run('search', () => new Promise(() => {}))
    const model = plan.run('model', () => new Promise(() => {}))
    const log = plan.slice('log')
    search.catch(() => {})
    model.catch(() => {})
    clock.advance(200)
    await expect(search).rejects.toMatchObject({ slice: 'search' })
    const reason = new DeadlineExceededError({ budgetMs: 1000, elapsedMs: 200, slice: 'search' })
    request.cancel(reason)
    await expect(model).rejects.toBe(reason)
    log.dispose()
    expect(plan.report().map((row) => row.outcome)).toEqual(['exceeded', 'cancelled', 'cancelled'])
    expect(ends).toEqual(['search=exceeded', 'model=cancelled', 'log=cancelled'])
  })

  it('is cancelled by slice() too, ended after its own time would have passed (a step that ignored its signal)', async () => {
    const clock = new ManualClock()
    const request = Deadline.after(1000, { clock })
    const plan = request.plan({ search: 0.2, model: 0.8 }, { reserveMs: 0 })
    const search = plan.run('search', () => new Promise(() => {}))
    search.catch(() => {})
    const model = plan.slice('model')
    clock.advance(200)
    await expect(search).rejects.toMatchObject({ slice: 'search' })
    request.cancel(new DeadlineExceededError({ budgetMs: 1000, elapsedMs: 200, slice: 'search' }))
    clock.advance(900)
    model.dispose()
    expect(plan.report().map((row) => row.outcome)).toEqual(['exceeded', 'cancelled'])
  })

  it('stays exceeded when the request itself runs out', async () => {
    const clock = new ManualClock()
    const plan = Deadline.after(1000, { clock }).plan({ model: 1 }, { reserveMs: 0 })
    const model = plan.run('model', () => new Promise(() => {}))
    model.catch(() => {})
    clock.advance(1000)
    await expect(model).rejects.toMatchObject({ slice: 'model' })
    expect(plan.report()[0]?.outcome).toBe('exceeded')
  })
})
