import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'

/**
 * A child disposed by a sibling's callback while its parent's end reaches
 * the children (the parent's expiry or cancel, one child's onExpire,
 * onCancel, onDone or abort listener disposing another) is released there
 * and then, as one disposed a moment before: the end no longer reaches it.
 * It did: the disposed child's onExpire ran, its signal aborted and its
 * onDone listeners were called, after its owner had let it go.
 */
describe('a child disposed while its parent’s end reaches the children', () => {
  it('at the parent’s expiry: no onExpire, no abort, no onDone for it afterwards', () => {
    const clock = new ManualClock()
    const parent = Deadline.after(100, { clock })
    const heard: string[] = []
    let second: Deadline | undefined
    const first = parent.child(200, {
      onExpire: () => {
        heard.push('first onExpire')
        second?.dispose()
      },
    })
    second = parent.child(200, { onExpire: () => heard.push('second onExpire') })
    const signal = second.signal
    second.onDone(() => heard.push('second onDone'))
    clock.advance(100)
    expect(first.done).toBe(true)
    expect(heard).toEqual(['first onExpire'])
    expect([signal.aborted, second.done]).toEqual([false, false])
  })

  it('at the parent’s cancel: no onCancel, no abort for it afterwards', () => {
    const clock = new ManualClock()
    const parent = Deadline.after(100, { clock })
    const heard: string[] = []
    let second: Deadline | undefined
    parent.child(50).onDone(() => second?.dispose())
    second = parent.child(50, { onCancel: () => heard.push('second onCancel') })
    parent.cancel(new Error('the client left'))
    expect(heard).toEqual([])
    expect(second.done).toBe(false)
    // As when disposed a moment before the cancel.
    const before = Deadline.after(100, { clock })
    const released = before.child(50, { onCancel: () => heard.push('released onCancel') })
    released.dispose()
    before.cancel(new Error('the client left'))
    expect([heard, released.done]).toEqual([[], false])
  })

  it('the other children still end with the parent, and none is kept', () => {
    const clock = new ManualClock()
    const parent = Deadline.after(100, { clock })
    let second: Deadline | undefined
    const first = parent.child(200, { onExpire: () => second?.dispose() })
    second = parent.child(200)
    const third = parent.child(200)
    clock.advance(100)
    expect([first.done, second.done, third.done]).toEqual([true, false, true])
    expect(clock.pendingTimers).toBe(0)
  })
})
