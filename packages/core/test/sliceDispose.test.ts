import {
  ClientClosedError,
  coreChannels,
  Deadline,
  ManualClock,
  type SliceEndMessage,
} from '@hourglass/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

/**
 * `slice()` says "dispose it when the step ends": a slice ended that way
 * (`dispose()`, or `using`) is over, in `report()` and for a tracer (its
 * sliceEnd, which ends its span) — not `running` for the rest of the request.
 */
describe('disposing a slice started with plan.slice()', () => {
  let ends: SliceEndMessage[]
  const listener = (m: SliceEndMessage) => ends.push(m)
  beforeEach(() => {
    ends = []
    coreChannels.sliceEnd.subscribe(listener)
  })
  afterEach(() => coreChannels.sliceEnd.unsubscribe(listener))

  const row = (plan: ReturnType<Deadline['plan']>, name: string) =>
    plan.report().find((r) => r.name === name)

  it('ends it ok, with the time it ran, and publishes its end once', () => {
    const clock = new ManualClock()
    const plan = Deadline.after(1000, { clock }).plan({ fetch: 1, write: 1 }, { reserveMs: 0 })
    const slice = plan.slice('fetch')
    clock.advance(20)
    slice.dispose()
    clock.advance(30)
    expect(row(plan, 'fetch')).toEqual({
      name: 'fetch',
      allottedMs: 500,
      usedMs: 20,
      outcome: 'ok',
    })
    slice.dispose()
    expect(ends.map((m) => [m.slice, m.outcome, m.usedMs])).toEqual([['fetch', 'ok', 20]])
  })

  it('ends it at the end of a `using` block', () => {
    const clock = new ManualClock()
    const plan = Deadline.after(1000, { clock }).plan({ fetch: 1 }, { reserveMs: 0 })
    {
      using _slice = plan.slice('fetch')
      clock.advance(5)
    }
    expect(row(plan, 'fetch')?.outcome).toBe('ok')
    expect(ends.map((m) => m.outcome)).toEqual(['ok'])
  })

  it('says how its deadline ended: exceeded when it ran out, cancelled when the request was', () => {
    const clock = new ManualClock()
    const request = Deadline.after(1000, { clock })
    const plan = request.plan({ fetch: { ms: 100 }, write: 1 }, { reserveMs: 0 })
    const fetch = plan.slice('fetch')
    clock.advance(100)
    fetch.dispose()
    const write = plan.slice('write')
    request.cancel(new ClientClosedError())
    write.dispose()
    expect(plan.report().map((r) => [r.name, r.outcome])).toEqual([
      ['fetch', 'exceeded'],
      ['write', 'cancelled'],
    ])
  })

  it('leaves an outcome given by end(name) as it is, and run() publishes one end', async () => {
    const clock = new ManualClock()
    const plan = Deadline.after(1000, { clock }).plan({ fetch: 1, write: 1 }, { reserveMs: 0 })
    const slice = plan.slice('fetch')
    plan.end('fetch', 'failed')
    slice.dispose()
    await plan.run('write', () => 'done')
    expect(ends.map((m) => [m.slice, m.outcome])).toEqual([
      ['fetch', 'failed'],
      ['write', 'ok'],
    ])
  })
})
