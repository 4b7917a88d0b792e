import {
  ClientClosedError,
  coreChannels,
  Deadline,
  type DeadlineCancelMessage,
  type DeadlineExpireMessage,
  isDeadlineExceeded,
  ManualClock,
  type SliceEndMessage,
  wait,
} from '@hourglass/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

/** The promise's outcome once every pending callback has run, else 'still running' (no timer). */
function settled(promise: Promise<unknown>): Promise<unknown> {
  return Promise.race([
    promise.then(
      () => 'resolved',
      (error: unknown) => error,
    ),
    new Promise((resolve) => setImmediate(() => resolve('still running'))),
  ])
}

/**
 * Dark mode (`observe: true`) is a trial of a budget: its own expiry aborts
 * nothing. Under an enforcing deadline it is still work for that deadline's
 * caller, and when the caller is answered (a 504) nobody waits for it.
 */
describe('an observe-only child under an enforcing parent', () => {
  it('is ended with the parent’s reason when the parent expires, after the parent’s answer', () => {
    const clock = new ManualClock()
    const order: string[] = []
    const request = Deadline.after(100, { clock, onExpire: () => order.push('504') })
    const dark = request.child(1000, { observe: true })
    const heard: unknown[] = []
    dark.onDone((reason) => {
      order.push('dark aborted')
      heard.push(reason)
    })
    const signal = dark.signal

    clock.advance(100)

    expect(order).toEqual(['504', 'dark aborted'])
    expect(isDeadlineExceeded(request.reason)).toBe(true)
    expect(signal.aborted).toBe(true)
    expect(signal.reason).toBe(request.reason)
    expect(heard).toEqual([request.reason])
    expect(dark.done).toBe(true)
    expect(dark.reason).toBe(request.reason)
    expect(() => dark.throwIfExpired()).toThrow(request.reason as Error)
    expect(clock.pendingTimers).toBe(0)
  })

  it('stops work waiting under it (and under its children) at the parent’s expiry', async () => {
    const clock = new ManualClock()
    const request = Deadline.after(100, { clock })
    const dark = request.child(undefined, { observe: true })
    const below = dark.child(5000)
    const waiting = wait(5000, { deadline: below })
    clock.advance(100)
    expect(await settled(waiting)).toBe(request.reason)
    expect(below.signal.reason).toBe(request.reason)
  })

  it('lets its own earlier expiry pass unenforced, and is ended when the parent’s comes', () => {
    const clock = new ManualClock()
    const request = Deadline.after(100, { clock })
    const seen: Deadline[] = []
    const dark = request.child(50, { observe: true, onExpire: (d) => seen.push(d) })
    const signal = dark.signal

    clock.advance(60)
    expect(seen).toEqual([dark]) // reported, as dark mode does
    expect(signal.aborted).toBe(false) // but not enforced

    clock.advance(40)
    expect(signal.reason).toBe(request.reason)
    expect(seen).toEqual([dark]) // its expiry is reported once
  })

  it('is ended at once when made under a parent that has already expired', () => {
    const clock = new ManualClock()
    const request = Deadline.after(100, { clock })
    clock.advance(100)
    const dark = request.child(1000, { observe: true })
    expect(dark.signal.reason).toBe(request.reason)
    expect(dark.done).toBe(true)
  })

  it('is cancelled with the parent’s cancel reason, before or after its own expiry', () => {
    const clock = new ManualClock()
    const request = Deadline.after(1000, { clock })
    const early = request.child(50, { observe: true })
    const late = request.child(500, { observe: true })
    clock.advance(60) // early's expiry observed
    const left = new ClientClosedError()
    request.cancel(left)
    expect(early.signal.reason).toBe(left)
    expect(late.signal.reason).toBe(left)
  })

  describe('events', () => {
    let expires: DeadlineExpireMessage[]
    let cancels: DeadlineCancelMessage[]
    const onExpire = (m: DeadlineExpireMessage) => expires.push(m)
    const onCancel = (m: DeadlineCancelMessage) => cancels.push(m)
    beforeEach(() => {
      expires = []
      cancels = []
      coreChannels.deadlineExpire.subscribe(onExpire)
      coreChannels.deadlineCancel.subscribe(onCancel)
    })
    afterEach(() => {
      coreChannels.deadlineExpire.unsubscribe(onExpire)
      coreChannels.deadlineCancel.unsubscribe(onCancel)
    })

    it('reports the child’s time as run out (observed), then its cancel by the parent’s reason', () => {
      const clock = new ManualClock()
      const request = Deadline.after(100, { clock })
      const dark = request.child(1000, { observe: true })
      clock.advance(100)
      expect(expires.map((m) => [m.deadline, m.observe])).toEqual([
        [request, false],
        [dark, true],
      ])
      expect(cancels).toEqual([{ deadline: dark, reason: request.reason }])
    })
  })
})

describe('what stays as it was', () => {
  it('an observe-only deadline’s own expiry aborts nothing', () => {
    const clock = new ManualClock()
    const request = Deadline.after(1000, { clock })
    const dark = request.child(50, { observe: true })
    let aborted = 0
    dark.onDone(() => aborted++)
    clock.advance(50)
    expect(dark.expired).toBe(true)
    expect(dark.signal.aborted).toBe(false)
    expect(aborted).toBe(0)
  })

  it('an observe-only parent’s observed expiry aborts nothing in its observe-only children', () => {
    const clock = new ManualClock()
    const dark = Deadline.after(100, { clock, observe: true })
    const inherited = dark.child()
    const explicit = dark.child(1000, { observe: true })
    clock.advance(100)
    expect(dark.signal.aborted).toBe(false)
    expect(inherited.signal.aborted).toBe(false)
    expect(explicit.signal.aborted).toBe(false)
  })
})

describe('the outcome of a dark-mode slice that overran', () => {
  let ends: SliceEndMessage[]
  const listener = (m: SliceEndMessage) => ends.push(m)
  beforeEach(() => {
    ends = []
    coreChannels.sliceEnd.subscribe(listener)
  })
  afterEach(() => coreChannels.sliceEnd.unsubscribe(listener))

  const outcomes = (plan: ReturnType<Deadline['plan']>) =>
    plan.report().map((r) => [r.name, r.outcome])

  it('is observed, not ok, through run(), slice() + dispose and end(name)', async () => {
    const clock = new ManualClock()
    const request = Deadline.after(1000, { clock, observe: true })
    const plan = request.plan(
      { parse: { ms: 100 }, model: { ms: 100 }, write: { ms: 100 } },
      { reserveMs: 0 },
    )
    const answer = await plan.run('parse', () => {
      clock.advance(150) // ran past its 100 ms: dark mode lets it finish
      return 'parsed'
    })
    expect(answer).toBe('parsed')

    const model = plan.slice('model')
    clock.advance(150)
    model.dispose()

    plan.slice('write')
    clock.advance(150)
    plan.end('write')

    expect(outcomes(plan)).toEqual([
      ['parse', 'observed'],
      ['model', 'observed'],
      ['write', 'observed'],
    ])
    expect(ends.map((m) => [m.slice, m.outcome])).toEqual([
      ['parse', 'observed'],
      ['model', 'observed'],
      ['write', 'observed'],
    ])
  })

  it('stays ok when it ended in time, and failed when it threw', async () => {
    const clock = new ManualClock()
    const plan = Deadline.after(1000, { clock, observe: true }).plan(
      { quick: { ms: 100 }, broken: { ms: 100 } },
      { reserveMs: 0 },
    )
    await plan.run('quick', () => clock.advance(99))
    await expect(
      plan.run('broken', () => {
        clock.advance(150)
        throw new Error('parse error')
      }),
    ).rejects.toThrow('parse error')
    expect(outcomes(plan)).toEqual([
      ['quick', 'ok'],
      ['broken', 'failed'],
    ])
  })

  it('end(name) without an outcome judges an enforced slice as disposing it does', () => {
    const clock = new ManualClock()
    const plan = Deadline.after(1000, { clock }).plan({ model: { ms: 100 } }, { reserveMs: 0 })
    plan.slice('model')
    clock.advance(100) // its time ran out: aborted
    plan.end('model')
    expect(outcomes(plan)).toEqual([['model', 'exceeded']])
  })

  it('is exceeded when the enforcing request above it expired while it ran', async () => {
    const clock = new ManualClock()
    const request = Deadline.after(100, { clock })
    const plan = request
      .child(undefined, { observe: true })
      .plan({ model: { ms: 500 } }, { reserveMs: 0 })
    const run = plan.run('model', () => wait(10_000, { clock }))
    clock.advance(100)
    expect(isDeadlineExceeded(await settled(run))).toBe(true)
    expect(outcomes(plan)).toEqual([['model', 'exceeded']])
  })
})

describe('plan.allotment(name) of a slice that has started', () => {
  it('is what the slice was given when it started, for shares and fixed slices', () => {
    const clock = new ManualClock()
    const plan = Deadline.after(1000, { clock }).plan(
      { a: 1, b: 1, w: { ms: 100 } },
      { reserveMs: 0 },
    )
    const before = plan.allotment('a')
    plan.slice('a')
    expect(plan.allotment('a')).toBe(before)
    expect(plan.allotment('a')).toBe(450)
    clock.advance(100)
    plan.end('a')
    plan.slice('b')
    expect(plan.allotment('b')).toBe(800) // the last share: all that is left but w's
    expect(plan.allotment('a')).toBe(450)
    plan.end('b')
    clock.advance(850)
    plan.slice('w')
    expect(plan.allotment('w')).toBe(50)
    clock.advance(40)
    expect(plan.allotment('w')).toBe(50)
    expect(plan.report().map((r) => [r.name, r.allottedMs])).toEqual([
      ['a', 450],
      ['b', 800],
      ['w', 50],
    ])
  })
})
