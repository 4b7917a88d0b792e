import { coreChannels, Deadline, ManualClock, type SliceEndMessage } from '@hourglass/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

/**
 * A slice ended by a cancel is `cancelled`, whatever the reason: `cancel`
 * takes any value, and one that was no AbortError (a shutdown `Error`, a
 * string, a `TimeoutError`) was reported `failed`, as if the step broke.
 */
describe('a slice ended by a cancel whose reason is no AbortError', () => {
  const reasons: Array<[string, unknown]> = [
    ['an Error', new Error('server shutting down')],
    ['a string', 'bye'],
    ['a TimeoutError', new DOMException('t', 'TimeoutError')],
  ]
  let ends: string[] = []
  const onEnd = (m: SliceEndMessage) => ends.push(`${m.slice}=${m.outcome}`)
  beforeEach(() => {
    ends = []
    coreChannels.sliceEnd.subscribe(onEnd)
  })
  afterEach(() => {
    coreChannels.sliceEnd.unsubscribe(onEnd)
  })

  for (const [what, reason] of reasons) {
    it(`is cancelled for ${what}, through the request's signal, by slice() and by run()`, async () => {
      const clock = new ManualClock()
      const ac = new AbortController()
      const plan = Deadline.after(1000, { clock, signal: ac.signal }).plan({ a: 1, b: 1 })
      const a = plan.slice('a')
      const b = plan.run('b', () => new Promise(() => {}))
      ac.abort(reason)
      a.dispose()
      await expect(b).rejects.toBe(reason)
      expect(plan.report().map((row) => row.outcome)).toEqual(['cancelled', 'cancelled'])
      expect(ends).toEqual(['a=cancelled', 'b=cancelled'])
    })
  }

  it('is cancelled when the step wraps the reason as its cause', async () => {
    const deadline = Deadline.after(1000, { clock: new ManualClock() })
    const plan = deadline.plan({ a: 1 })
    const reason = new Error('client gone')
    const run = plan.run('a', (_signal, slice) => {
      slice.cancel(reason)
      throw new Error('stream cut', { cause: reason })
    })
    await expect(run).rejects.toBe(reason)
    expect(plan.report()[0]?.outcome).toBe('cancelled')
  })

  it('is cancelled when the request is cancelled while the step runs (d.cancel during plan.run)', async () => {
    const deadline = Deadline.after(1000, { clock: new ManualClock() })
    const plan = deadline.plan({ a: 1 })
    const run = plan.run('a', () => new Promise(() => {}))
    deadline.cancel(new Error('client gone'))
    await expect(run).rejects.toThrow('client gone')
    expect(plan.report()[0]?.outcome).toBe('cancelled')
  })

  it('stays failed for an error the step throws itself while its slice is live', async () => {
    const plan = Deadline.after(1000, { clock: new ManualClock() }).plan({ a: 1, b: 1 })
    await expect(plan.run('a', () => Promise.reject(new Error('bad input')))).rejects.toThrow(
      'bad input',
    )
    await expect(plan.run('b', () => Promise.reject('bye'))).rejects.toBe('bye')
    expect(plan.report().map((row) => row.outcome)).toEqual(['failed', 'failed'])
  })

  it('stays failed for a step’s error once an observe-only slice’s time ran out (done, no reason)', async () => {
    const clock = new ManualClock()
    const plan = Deadline.after(100, { clock, observe: true }).plan({ a: 1 }, { reserveMs: 0 })
    const run = plan.run('a', () => {
      clock.advance(150)
      throw new Error('late and broken')
    })
    await expect(run).rejects.toThrow('late and broken')
    expect(plan.report()[0]?.outcome).toBe('failed')
  })
})
