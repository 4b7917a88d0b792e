import diagnostics from 'node:diagnostics_channel'
import { getEventListeners } from 'node:events'
import {
  type Clock,
  coreChannels,
  Deadline,
  DeadlineExceededError,
  isDeadlineExceeded,
  MAX_TIMER_MS,
  ManualClock,
} from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'

const clock = () => new ManualClock(1000)

describe('Deadline.after', () => {
  it('counts down on its clock and never reports negative time', () => {
    const c = clock()
    const d = Deadline.after(100, { clock: c })
    expect(d.budgetMs).toBe(100)
    expect(d.expiresAt).toBe(1100)
    c.advance(40)
    expect(d.remaining()).toBe(60)
    expect(d.elapsed()).toBe(40)
    c.advance(500)
    expect(d.remaining()).toBe(0)
    expect(d.expired).toBe(true)
  })

  it('aborts its signal at expiry with a DeadlineExceededError carrying budget and elapsed', () => {
    const c = clock()
    const d = Deadline.after(100, { clock: c })
    const signal = d.signal
    c.advance(99)
    expect(signal.aborted).toBe(false)
    c.advance(1)
    expect(signal.aborted).toBe(true)
    expect(isDeadlineExceeded(signal.reason)).toBe(true)
    expect(signal.reason).toMatchObject({
      code: 'DEADLINE_EXCEEDED',
      budgetMs: 100,
      elapsedMs: 100,
    })
    expect(() => d.throwIfExpired()).toThrow(DeadlineExceededError)
  })

  it('gives a signal read after expiry already aborted', () => {
    const c = clock()
    const d = Deadline.after(10, { clock: c })
    c.advance(10)
    expect(d.signal.aborted).toBe(true)
  })

  it('treats a negative budget as already expired and rejects NaN with a clear TypeError', () => {
    const d = Deadline.after(-5, { clock: clock() })
    expect(d.expired).toBe(true)
    expect(d.done).toBe(true)
    expect(d.signal.aborted).toBe(true)
    expect(() => Deadline.after(Number.NaN)).toThrow(/expects a number of milliseconds/)
  })

  it('fires budgets beyond 2^31-1 ms at the right time instead of overflowing to 1 ms', () => {
    const c = clock()
    const d = Deadline.after(MAX_TIMER_MS + 5000, { clock: c })
    c.advance(1000)
    expect(d.done).toBe(false)
    c.advance(MAX_TIMER_MS)
    expect(d.done).toBe(false)
    c.advance(4000)
    expect(d.done).toBe(true)
    expect(c.pendingTimers).toBe(0)
  })

  it('never expires early, even when its timer fires before the clock reaches expiresAt', () => {
    // libuv counts whole ms and Node truncates fractional delays: real timers
    // can fire a little early. This clock's timers fire 0.5 ms early.
    const manual = clock()
    const early: Clock = {
      now: () => manual.now(),
      setTimeout: (fn, ms) => manual.setTimeout(fn, Math.max(0, ms - 0.5)),
      clearTimeout: (h) => manual.clearTimeout(h),
    }
    const d = Deadline.after(100, { clock: early })
    manual.advance(99.9) // the first timer fired at 99.5 and was re-armed
    expect(d.done).toBe(false)
    manual.advance(0.1)
    expect(d.done).toBe(true)
    expect(d.signal.reason).toMatchObject({ elapsedMs: 100 })
    expect(manual.pendingTimers).toBe(0)
  })

  it('uses the real clock by default and fires on time', async () => {
    const d = Deadline.after(30)
    const started = performance.now()
    await new Promise((resolve) => d.signal.addEventListener('abort', resolve))
    const took = performance.now() - started
    expect(took).toBeGreaterThanOrEqual(28)
    expect(took).toBeLessThan(1000)
  })
})

describe('Deadline.never', () => {
  it('has infinite time, no timer, and can still be cancelled', () => {
    const c = clock()
    const d = Deadline.never({ clock: c })
    expect(d.remaining()).toBe(Number.POSITIVE_INFINITY)
    expect(c.pendingTimers).toBe(0)
    c.advance(1e12)
    expect(d.expired).toBe(false)
    d.cancel(new Error('stop'))
    expect(d.signal.aborted).toBe(true)
    expect((d.signal.reason as Error).message).toBe('stop')
  })
})

describe('child deadlines', () => {
  it('never outlive the parent: expiry is min(parent, now + ms)', () => {
    const c = clock()
    const parent = Deadline.after(100, { clock: c })
    c.advance(30)
    expect(parent.child(500).remaining()).toBe(70)
    expect(parent.child(20).remaining()).toBe(20)
    expect(parent.child().expiresAt).toBe(parent.expiresAt)
  })

  it('abort when the parent expires, with an error naming the child', () => {
    const c = clock()
    const parent = Deadline.after(100, { clock: c })
    const child = parent.child(1000, { name: 'model' })
    c.advance(100)
    expect(child.signal.aborted).toBe(true)
    expect(child.signal.reason).toMatchObject({ code: 'DEADLINE_EXCEEDED', slice: 'model' })
  })

  it('abort with the same reason when the parent is cancelled', () => {
    const parent = Deadline.after(100, { clock: clock() })
    const grandchild = parent.child(50).child(20)
    const reason = new Error('client left')
    parent.cancel(reason)
    expect(grandchild.signal.reason).toBe(reason)
  })

  it('created under an ended parent start ended', () => {
    const c = clock()
    const expired = Deadline.after(10, { clock: c })
    c.advance(10)
    expect(expired.child(100).signal.reason).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
    const cancelled = Deadline.after(10, { clock: c })
    cancelled.cancel('why')
    expect(cancelled.child(100).signal.reason).toBe('why')
  })

  it('expiring early do not end the parent', () => {
    const c = clock()
    const parent = Deadline.after(100, { clock: c })
    const child = parent.child(10)
    c.advance(10)
    expect(child.done).toBe(true)
    expect(parent.done).toBe(false)
  })

  it("its own onExpire (the owner's answer) comes before its signal aborts and its onDone listeners run", () => {
    const clock = new ManualClock(0)
    const order: string[] = []
    const d = Deadline.after(100, {
      clock,
      onExpire: (x) => order.push(`onExpire (done ${x.done}, reason ${(x.reason as Error).name})`),
    })
    d.signal.addEventListener('abort', () => order.push('signal aborted'))
    d.onDone(() => order.push('onDone'))
    clock.advance(100)
    expect(order).toEqual([
      'onExpire (done true, reason DeadlineExceededError)',
      'signal aborted',
      'onDone',
    ])
  })

  it('due together with the parent, expire after it: the parent’s onExpire comes before the child’s abort', () => {
    // A clock whose timers run only when told, in the order the test picks:
    // a busy loop, where the parent's time has passed and its timer not run.
    let now = 1000
    const timers: (() => void)[] = []
    const late: Clock = {
      now: () => now,
      setTimeout: (callback) => timers.push(callback),
      clearTimeout: () => {},
    }
    const order: string[] = []
    const parentAndChild = (childName: string) => {
      const parent = Deadline.after(100, {
        clock: late,
        onExpire: () => order.push('parent expired'),
      })
      parent.child(500).onDone(() => order.push(`${childName} aborted`))
      return parent
    }
    const parent = parentAndChild('same-expiry child')
    now = 1150
    // Made after the parent's time, before its timer ran.
    const madeLate = parent.child(500)
    expect(order).toEqual(['parent expired', 'same-expiry child aborted'])
    expect(parent.done && madeLate.done).toBe(true)

    // The child's own timer first: still the parent first.
    now = 2000
    order.length = 0
    timers.length = 0
    parentAndChild('child')
    now = 2100
    timers[1]?.() // the child's timer
    expect(order).toEqual(['parent expired', 'child aborted'])
  })

  it('release their timer and their place in the parent on dispose', () => {
    const c = clock()
    const parent = Deadline.after(100, { clock: c })
    const child = parent.child(50)
    expect(c.pendingTimers).toBe(2)
    child.dispose()
    expect(c.pendingTimers).toBe(1)
    c.advance(100)
    expect(parent.done).toBe(true)
    // Disposed: released, not aborted.
    expect(child.signal.aborted).toBe(false)
  })

  it('support `using` for scoped release', () => {
    const c = clock()
    const parent = Deadline.after(100, { clock: c })
    {
      using _child = parent.child(10)
      expect(c.pendingTimers).toBe(2)
    }
    expect(c.pendingTimers).toBe(1)
  })

  it('keep no abort listener on the parent signal, however many there are', () => {
    const parent = Deadline.after(60_000)
    const children = Array.from({ length: 1000 }, () => parent.child(1000))
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0)
    for (const child of children) child.dispose()
    parent.dispose()
  })
})

describe('cancel and external signals', () => {
  it('cancel aborts with the reason (an AbortError by default) and releases the timer', () => {
    const c = clock()
    const d = Deadline.after(100, { clock: c })
    d.cancel()
    expect(d.signal.reason).toBeInstanceOf(DOMException)
    expect((d.signal.reason as DOMException).name).toBe('AbortError')
    expect(c.pendingTimers).toBe(0)
    expect(() => d.throwIfExpired()).toThrow(DOMException)
  })

  it('follows an external signal and removes its listener when done', () => {
    const controller = new AbortController()
    const d = Deadline.after(100, { clock: clock(), signal: controller.signal })
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1)
    controller.abort('caller gave up')
    expect(d.signal.reason).toBe('caller gave up')
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)

    const other = new AbortController()
    const e = Deadline.after(100, { clock: clock(), signal: other.signal })
    e.dispose()
    expect(getEventListeners(other.signal, 'abort')).toHaveLength(0)
  })

  it('starts cancelled under an already-aborted external signal', () => {
    const d = Deadline.after(100, { signal: AbortSignal.abort('gone') })
    expect(d.signal.reason).toBe('gone')
  })
})

describe('onDone', () => {
  it('calls back with the reason on expiry or cancel, once, without creating a signal listener', () => {
    const c = clock()
    const expiring = Deadline.after(10, { clock: c })
    const seen: unknown[] = []
    expiring.onDone((reason) => seen.push(reason))
    c.advance(10)
    expect(seen).toHaveLength(1)
    expect(seen[0]).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
    expect(getEventListeners(expiring.signal, 'abort')).toHaveLength(0)

    const cancelled = Deadline.after(10, { clock: c })
    const reasons: unknown[] = []
    cancelled.onDone((reason) => reasons.push(reason))
    cancelled.cancel('gone')
    cancelled.cancel('again')
    expect(reasons).toEqual(['gone'])
  })

  it('unsubscribes, calls at once when already aborted, and stays silent for an observe-only expiry', () => {
    const c = clock()
    const d = Deadline.after(10, { clock: c })
    let calls = 0
    const off = d.onDone(() => calls++)
    off()
    c.advance(10)
    expect(calls).toBe(0)
    d.onDone(() => calls++)
    expect(calls).toBe(1)

    const observed = Deadline.after(10, { clock: c, observe: true })
    observed.onDone(() => calls++)
    c.advance(10)
    expect(calls).toBe(1)
  })
})

describe('observe-only deadlines (dark mode)', () => {
  it('report expiry without aborting or throwing, and children inherit the mode', () => {
    const c = clock()
    const seen: Deadline[] = []
    const d = Deadline.after(50, { clock: c, observe: true, onExpire: (x) => seen.push(x) })
    const child = d.child(1000)
    c.advance(50)
    expect(seen).toEqual([d])
    expect(d.expired).toBe(true)
    expect(d.remaining()).toBe(0)
    expect(d.signal.aborted).toBe(false)
    expect(child.signal.aborted).toBe(false)
    expect(child.observe).toBe(true)
    expect(() => d.throwIfExpired()).not.toThrow()
  })

  it('can still be cancelled after an observed expiry, which aborted nothing', () => {
    const c = clock()
    const d = Deadline.after(50, { clock: c, observe: true })
    const child = d.child()
    const heard: unknown[] = []
    d.onDone((why) => heard.push(why))
    c.advance(60)
    expect(heard).toEqual([])
    const reason = new Error('the client left')
    d.cancel(reason)
    expect(d.signal.aborted).toBe(true)
    expect(d.signal.reason).toBe(reason)
    expect(heard).toEqual([reason])
    expect(child.signal.reason).toBe(reason)
    d.cancel(new Error('again')) // once only
    expect(heard).toEqual([reason])
  })

  it('keeps its link to an external signal through an observed expiry', () => {
    const c = clock()
    const external = new AbortController()
    const d = Deadline.after(50, { clock: c, observe: true, signal: external.signal })
    c.advance(60)
    const reason = new Error('caller aborted')
    external.abort(reason)
    expect(d.signal.reason).toBe(reason)
  })
})

describe('diagnostics events', () => {
  const unsubscribers: Array<() => void> = []
  afterEach(() => {
    for (const u of unsubscribers.splice(0)) u()
  })
  function listen(name: string): unknown[] {
    const messages: unknown[] = []
    const fn = (m: unknown) => messages.push(m)
    diagnostics.subscribe(name, fn)
    unsubscribers.push(() => diagnostics.unsubscribe(name, fn))
    return messages
  }

  it('publishes create, expire and cancel with budget and remaining time', () => {
    const created = listen(coreChannels.deadlineCreate.name)
    const expired = listen(coreChannels.deadlineExpire.name)
    const cancelled = listen(coreChannels.deadlineCancel.name)
    const c = clock()
    const a = Deadline.after(100, { clock: c })
    const b = Deadline.after(200, { clock: c })
    c.advance(100)
    b.cancel('x')
    expect(created).toMatchObject([
      { deadline: a, budgetMs: 100, remainingMs: 100 },
      { deadline: b, budgetMs: 200, remainingMs: 200 },
    ])
    expect(expired).toMatchObject([{ deadline: a, budgetMs: 100, elapsedMs: 100, observe: false }])
    expect(cancelled).toMatchObject([{ deadline: b, reason: 'x' }])
  })
})
