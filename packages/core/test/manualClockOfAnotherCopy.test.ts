import { Deadline, ManualClock, wait } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

// Two installed copies of core (the app's, and @hourglass/express's own): the
// app's tests hand their ManualClock to a deadline the other copy makes
// (`deadline({ clock })`). That clock has none of the other copy's private
// fields, and its deadlines and waits were rounded up to whole ms (a 0.5 ms
// deadline read `expired` at `advance(0.5)` with nothing fired), far ones
// stepped in 2^31-1 ms timers (advance(2**52) took ~620 ms). The query makes
// a second instance of the module: a ManualClock class of "another copy".
const other = (await import(
  // @ts-expect-error -- a query the module resolver does not type
  '../src/ManualClock.ts?manual-clock-copy'
)) as typeof import('../src/ManualClock.js')

describe('a ManualClock of another installed copy of core', () => {
  it('is a second class (the premise)', () => {
    expect(other.ManualClock).not.toBe(ManualClock)
  })

  it('expires a deadline at its very time, a fraction of a ms included', () => {
    const clock = new other.ManualClock()
    const seen: string[] = []
    const d = Deadline.after(0.5, { clock, onExpire: () => seen.push('onExpire') })
    d.onDone(() => seen.push('abort'))
    clock.advance(0.5)
    expect(d.expired).toBe(true)
    expect(seen).toEqual(['onExpire', 'abort'])
  })

  it('ends a wait of 0.5 ms at advance(0.5)', async () => {
    const clock = new other.ManualClock()
    const done = wait(0.5, { clock }).then(() => 'resolved')
    clock.advance(0.5)
    const pending = new Promise((resolve) => setImmediate(() => resolve('pending')))
    expect(await Promise.race([done, pending])).toBe('resolved')
  })

  it('holds a far deadline as one whole timer, not 2^31-1 ms steps', () => {
    class Counting extends other.ManualClock {
      calls = 0
      override setTimeout(callback: () => void, ms: number): unknown {
        this.calls++
        return super.setTimeout(callback, ms)
      }
    }
    const clock = new Counting()
    const far = Deadline.after(2 ** 40, { clock })
    clock.advance(2 ** 40)
    expect(far.expired).toBe(true)
    // Armed through the clock's own schedule, as on this copy's ManualClock:
    // no setTimeout call at all, where steps made 512 of them.
    expect(clock.calls).toBe(0)
  })

  it('a clock carrying something else under the key is a plain clock, never a throw', () => {
    const key = Symbol.for('@hourglass/core.manualClockOps.v1')
    for (const ops of [{}, { firesExactly: () => true }, null, 'ops']) {
      const base = new ManualClock()
      const clock = {
        now: () => base.now(),
        setTimeout: (callback: () => void, ms: number) => base.setTimeout(callback, ms),
        clearTimeout: (handle: unknown) => base.clearTimeout(handle),
        [key]: ops,
      }
      const deadline = Deadline.after(5, { clock })
      base.advance(5)
      expect(deadline.expired).toBe(true)
    }
  })
})
