import { coreChannels, Deadline, type Deadline as DeadlineType, ManualClock } from '@hourglass/core'
import { afterAll, beforeEach, describe, expect, it } from 'vitest'

// README: dispose() "Does not abort; a disposed deadline no longer expires on
// its own". A child sharing the disposed parent's expiry used to expire the
// parent first (a 504 from onExpire after the request had ended fine), and
// throwIfExpired() expired it by reading the clock.
describe('a disposed deadline', () => {
  const expired: string[] = []
  // Only this file's deadlines (each on a ManualClock of its own): in a
  // worker shared with other files, a real-clock deadline another file left
  // behind can expire while these run, and was heard here.
  const onExpireEvent = (message: { deadline: DeadlineType }) => {
    if (message.deadline.clock instanceof ManualClock) expired.push(message.deadline.name ?? '?')
  }
  coreChannels.deadlineExpire.subscribe(onExpireEvent)
  beforeEach(() => {
    expired.length = 0
  })
  afterAll(() => coreChannels.deadlineExpire.unsubscribe(onExpireEvent))

  it('is not expired by a child that falls due with it', () => {
    const clock = new ManualClock()
    const heard: string[] = []
    const parent = Deadline.after(100, {
      clock,
      name: 'request',
      onExpire: () => heard.push('parent onExpire'),
    })
    const background = parent.child(Number.POSITIVE_INFINITY, { name: 'background' })
    parent.signal.addEventListener('abort', () => heard.push('parent aborted'))
    parent.dispose() // the request ended fine
    clock.advance(150)
    expect(heard).toEqual([])
    expect(parent.done).toBe(false)
    expect(parent.reason).toBeUndefined()
    expect(parent.signal.aborted).toBe(false)
    // The child still expires at its own time: dispose released only the parent.
    expect(background.done).toBe(true)
    expect(expired).toEqual(['background'])
  })

  it('throws nothing from throwIfExpired once its time has passed, and stays live', () => {
    const clock = new ManualClock()
    const heard: string[] = []
    const d = Deadline.after(100, { clock, name: 'd', onExpire: () => heard.push('onExpire') })
    d.dispose()
    clock.advance(150)
    expect(() => d.throwIfExpired()).not.toThrow()
    expect(heard).toEqual([])
    expect(d.done).toBe(false)
    expect(d.signal.aborted).toBe(false)
    expect(expired).toEqual([])
    // It no longer expires, so it reads as a deadline that never does (README: dispose()).
    expect(d.expired).toBe(false)
    expect(d.remaining()).toBe(Number.POSITIVE_INFINITY)
  })

  it('disposed through `using` ([Symbol.dispose]) never expires either', () => {
    const clock = new ManualClock()
    const heard: string[] = []
    let kept: DeadlineType | undefined
    {
      using d = Deadline.after(100, { clock, onExpire: () => heard.push('onExpire') })
      kept = d
      kept.child(Number.POSITIVE_INFINITY)
    }
    clock.advance(150)
    kept?.throwIfExpired()
    expect(heard).toEqual([])
    expect(kept?.done).toBe(false)
  })

  it('disposed after its time passed but before its late timer ran, is not expired later by a child', () => {
    // A busy loop: the clock moves, no timer runs; the handler answers and disposes.
    const clock = new ManualClock()
    const heard: string[] = []
    const request = Deadline.after(100, {
      clock,
      name: 'request',
      onExpire: () => heard.push('request onExpire'),
    })
    const background = request.child(Number.POSITIVE_INFINITY, { name: 'background' })
    const now = clock.now.bind(clock)
    clock.now = () => now() + 105
    request.dispose()
    clock.now = now
    clock.advance(105) // the late timers run now: only the child's was left
    expect(heard).toEqual([])
    expect(expired).toEqual(['background'])
    expect(request.done).toBe(false)
    expect(background.done).toBe(true)
    // It keeps reading expired (README: disposed after it ended, it keeps its end).
    expect(request.expired).toBe(true)
  })

  it('can still be cancelled, and an expired one still throws its reason', () => {
    const clock = new ManualClock()
    const d = Deadline.after(100, { clock })
    d.dispose()
    const reason = new Error('client left')
    d.cancel(reason)
    expect(() => d.throwIfExpired()).toThrow(reason)
    const e = Deadline.after(10, { clock, name: 'e' })
    clock.advance(10)
    e.dispose()
    expect(() => e.throwIfExpired()).toThrow(expect.objectContaining({ code: 'DEADLINE_EXCEEDED' }))
  })
})
