import { type Clock, Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it, vi } from 'vitest'
import { collectGarbage } from './support/collectGarbage.js'

describe('a child made after its observe-only parent’s expiry', () => {
  it('is still cancelled with the parent when the client leaves in dark mode', () => {
    const c = new ManualClock()
    const parent = Deadline.after(50, { clock: c, observe: true })
    c.advance(60) // expiry observed: nothing aborted
    const child = parent.child()
    const heard: unknown[] = []
    child.onDone((why) => heard.push(why))
    const reason = new Error('the client left')
    parent.cancel(reason)
    expect(child.signal.aborted).toBe(true)
    expect(child.signal.reason).toBe(reason)
    expect(heard).toEqual([reason])
  })

  it('still follows its own external signal', () => {
    const c = new ManualClock()
    const parent = Deadline.after(50, { clock: c, observe: true })
    c.advance(60)
    const external = new AbortController()
    const child = Deadline.after(100, { parent, signal: external.signal })
    const reason = new Error('caller aborted')
    external.abort(reason)
    expect(child.signal.reason).toBe(reason)
  })

  it('leaves nothing behind once disposed', () => {
    const c = new ManualClock()
    const parent = Deadline.after(50, { clock: c, observe: true })
    c.advance(60)
    const child = parent.child()
    child.dispose()
    parent.cancel(new Error('the client left'))
    expect(child.signal.aborted).toBe(false) // released: no longer linked
    expect(c.pendingTimers).toBe(0)
  })
})

describe('a listener that throws', () => {
  /**
   * Runs `act` with process.nextTick deferring into a list, puts the real one
   * back before anything else runs, then runs what was deferred and returns
   * what it threw: a throwing listener is reported as uncaught on the next
   * tick, as EventTarget does. The replacement lives only for the synchronous
   * `act`. Left in place until an afterEach, it was process.nextTick while
   * Vitest's runner worked between the test and its hooks, and Vitest's RPC
   * (which swaps process.nextTick for a call and puts back what it found, a
   * tick later) could put the spy back after the hook had restored it.
   */
  function reportedBy(act: () => void): unknown[] {
    const deferred: Array<() => void> = []
    const spy = vi
      .spyOn(process, 'nextTick')
      .mockImplementation(((fn: () => void) => void deferred.push(fn)) as typeof process.nextTick)
    try {
      act()
    } finally {
      spy.mockRestore()
    }
    const reported: unknown[] = []
    for (const fn of deferred) {
      try {
        fn()
      } catch (error) {
        reported.push(error)
      }
    }
    return reported
  }

  it('on cancel stops neither the other onDone listeners nor the children, and is reported', () => {
    const c = new ManualClock()
    const d = Deadline.after(100, { clock: c })
    const child = d.child()
    const heard: string[] = []
    const boom = new Error('listener bug')
    d.onDone(() => {
      throw boom
    })
    d.onDone(() => heard.push('second listener'))
    const reported = reportedBy(() => d.cancel(new Error('the client left')))
    expect(heard).toEqual(['second listener'])
    expect(child.done).toBe(true)
    expect(c.pendingTimers).toBe(0)
    expect(reported).toEqual([boom])
  })

  it('in onCancel stops neither the abort nor the onDone listeners nor the children, and is reported', () => {
    const c = new ManualClock()
    const boom = new Error('hook bug')
    const d = Deadline.after(100, {
      clock: c,
      onCancel: () => {
        throw boom
      },
    })
    const child = d.child()
    const heard: unknown[] = []
    d.onDone((why) => heard.push(why))
    const reason = new Error('stop')
    const reported = reportedBy(() => d.cancel(reason))
    expect([d.signal.aborted, heard, child.done, reported]).toEqual([true, [reason], true, [boom]])
  })

  it('at expiry (onExpire or onDone) leaves the signal aborted, the listeners called and the children expired', () => {
    const c = new ManualClock()
    const heard: string[] = []
    const d = Deadline.after(10, {
      clock: c,
      onExpire: () => {
        throw new Error('answer failed')
      },
    })
    const signal = d.signal
    d.onDone(() => heard.push('onDone'))
    const child = d.child(50)
    const childHeard: unknown[] = []
    child.onDone((why) => childHeard.push(why))
    const reported = reportedBy(() => c.advance(10))
    expect(signal.aborted).toBe(true)
    expect(heard).toEqual(['onDone'])
    expect(child.expired).toBe(true)
    expect(childHeard).toHaveLength(1)
    expect(reported).toHaveLength(1)
  })

  it('given to onDone of a deadline already aborted: called at once, its throw reported on the next tick as at expiry, not thrown to the caller', () => {
    const d = Deadline.after(0)
    const boom = new Error('listener bug')
    const heard: unknown[] = []
    let unsubscribe: (() => void) | undefined
    const reported = reportedBy(() => {
      expect(() => {
        unsubscribe = d.onDone((why) => {
          heard.push(why)
          throw boom
        })
      }).not.toThrow()
    })
    expect(heard).toEqual([d.reason])
    expect(reported).toEqual([boom])
    expect(typeof unsubscribe).toBe('function')
  })
})

describe('bad options and listeners are refused where they are given', () => {
  // A non-function onExpire or onDone listener was kept, called at expiry,
  // and its TypeError reported as uncaught on the next tick: the process
  // died at some later expiry, far from the bad call.
  it('a non-function onExpire or onDone listener is a TypeError at once, not a crash at expiry', () => {
    const clock = new ManualClock()
    expect(() => Deadline.after(10, { clock, onExpire: 'log' as unknown as () => void })).toThrow(
      new TypeError(`Deadline: onExpire must be a function, got 'log' (a string)`),
    )
    const deadline = Deadline.after(10, { clock })
    expect(() => deadline.onDone(undefined as unknown as () => void)).toThrow(
      new TypeError('onDone: listener must be a function, got undefined'),
    )
    const uncaught = vi.fn()
    process.on('uncaughtException', uncaught)
    try {
      clock.advance(20)
      expect(deadline.expired).toBe(true)
    } finally {
      process.off('uncaughtException', uncaught)
    }
    expect(clock.pendingTimers).toBe(0)
  })

  it('null options read as none; a clock or signal that is none is named', () => {
    const clock = new ManualClock()
    // On the system clock: a budget no pause of a loaded machine uses up
    // between the two calls (5 ms once read 0 in a CI run).
    const live = Deadline.after(60_000, null)
    expect(live.remaining()).toBeGreaterThan(0)
    live.dispose()
    expect(Deadline.never(null).remaining()).toBe(Number.POSITIVE_INFINITY)
    expect(() => Deadline.after(5, { clock: {} as never })).toThrow(
      /Deadline: clock must be a Clock .*, got an object/,
    )
    expect(() => Deadline.after(5, { clock, signal: { aborted: false } as never })).toThrow(
      new TypeError('Deadline: signal must be an AbortSignal, got an object'),
    )
  })
})

describe('onCancel: the owner hears a cancel that ends its live deadline', () => {
  it('is called once with the deadline and the reason, before the signal aborts and the onDone listeners', () => {
    const c = new ManualClock()
    const heard: unknown[] = []
    const d = Deadline.after(100, {
      clock: c,
      onCancel: (deadline, reason) => heard.push(['onCancel', deadline === d, reason, d.done]),
    })
    const signal = d.signal
    signal.addEventListener('abort', () => heard.push('abort'))
    d.onDone(() => heard.push('onDone'))
    const reason = new Error('stop')
    d.cancel(reason)
    d.cancel(new Error('again'))
    expect(heard).toEqual([['onCancel', true, reason, true], 'abort', 'onDone'])
  })

  it('hears a parent’s cancel, an external abort and a cancel after dispose; with no reason, the default', () => {
    const c = new ManualClock()
    const heard: unknown[] = []
    const onCancel = (_: Deadline, reason: unknown) => heard.push(reason)
    const parent = Deadline.after(100, { clock: c })
    Deadline.after(50, { parent, onCancel })
    const external = new AbortController()
    Deadline.after(50, { clock: c, signal: external.signal, onCancel })
    const disposed = Deadline.after(50, { clock: c, onCancel })
    disposed.dispose()
    parent.cancel('parent')
    external.abort('external')
    disposed.cancel('after dispose')
    Deadline.after(50, { parent, onCancel }) // made under a cancelled parent: cancelled at once
    Deadline.never({ clock: c, onCancel }).cancel()
    expect(heard.slice(0, 4)).toEqual(['parent', 'external', 'after dispose', 'parent'])
    expect(heard[4]).toBeInstanceOf(DOMException)
  })

  it('is not called at expiry, by dispose, or for a cancel after an observed expiry', () => {
    const c = new ManualClock()
    const heard: unknown[] = []
    const onCancel = (_: Deadline, reason: unknown) => heard.push(reason)
    const expiring = Deadline.after(10, { clock: c, onCancel })
    Deadline.after(10, { clock: c, onCancel }).dispose()
    const observed = Deadline.after(10, { clock: c, observe: true, onCancel })
    c.advance(10)
    expiring.cancel('late')
    observed.cancel('the client left')
    expect([heard, observed.signal.aborted]).toEqual([[], true])
  })

  it('one that is no function is a TypeError at once', () => {
    expect(() => Deadline.after(5, { onCancel: 'log' as never })).toThrow(
      new TypeError(`Deadline: onCancel must be a function, got 'log' (a string)`),
    )
  })
})

it('a listener or clock given as a number is a TypeError (a wrong type), not a RangeError', () => {
  expect(() => Deadline.after(5, { onExpire: 5 as never })).toThrow(TypeError)
  expect(() => Deadline.after(5, { onCancel: 5 as never })).toThrow(TypeError)
  expect(() => Deadline.after(5, { clock: 5 as never })).toThrow(TypeError)
  expect(() => Deadline.after(5).onDone(5 as never)).toThrow(TypeError)
})

describe('budgetMs on a clock that reads fractions (performance.now)', () => {
  it('is the budget asked for, not a float residue of expiresAt - now', () => {
    // 123.456 + 1990 - 123.456 is 1990.0000000000002 in doubles.
    const c = new ManualClock(123.456)
    expect(Deadline.after(1990, { clock: c }).budgetMs).toBe(1990)
    const parent = Deadline.after(5000, { clock: c })
    expect(parent.child(1990).budgetMs).toBe(1990)
    // Cut by its parent: what the parent has left.
    c.advance(0.5)
    expect(parent.child(10_000).budgetMs).toBe(parent.expiresAt - c.now())
  })
})

describe('a clock whose setTimeout returns no handle (its type allows it)', () => {
  it('a deadline cancelled or disposed is not kept alive by the timer nobody could clear', async () => {
    const manual = new ManualClock()
    const handleless: Clock = {
      now: () => manual.now(),
      setTimeout: (callback, ms) => {
        manual.setTimeout(callback, ms)
        return undefined
      },
      clearTimeout: () => {},
    }
    const refs = (() => {
      const cancelled = Deadline.after(60_000, { clock: handleless })
      cancelled.cancel(new Error('done'))
      const disposed = Deadline.after(60_000, { clock: handleless })
      disposed.dispose()
      return [new WeakRef(cancelled), new WeakRef(disposed)]
    })()
    await new Promise((resolve) => setImmediate(resolve))
    collectGarbage()
    expect(refs.map((ref) => ref.deref() === undefined)).toEqual([true, true])
    expect(manual.pendingTimers).toBe(2)
  })
})
