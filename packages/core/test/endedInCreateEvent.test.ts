import { getEventListeners } from 'node:events'
import { coreChannels, Deadline, type DeadlineCreateMessage, ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'

/**
 * A `hourglass:deadline:create` subscriber that ends the deadline it is
 * told of (cancels it: a load shedder; disposes it) runs inside the
 * constructor, before the deadline is linked. The constructor went on: the
 * cancelled or disposed deadline was put among its parent's children, kept a
 * listener on its external signal and armed a timer — all held until the
 * parent ended, the signal aborted and the timer fired.
 */
describe('a deadline ended by a subscriber of its create event', () => {
  let onCreate: ((message: DeadlineCreateMessage) => void) | undefined
  afterEach(() => {
    if (onCreate) coreChannels.deadlineCreate.unsubscribe(onCreate)
    onCreate = undefined
  })

  for (const how of ['cancel', 'dispose'] as const) {
    it(`${how}: holds no timer, no signal listener, no place among the parent's children`, () => {
      const clock = new ManualClock()
      const parent = Deadline.after(10_000, { clock })
      const controller = new AbortController()
      onCreate = ({ deadline }) => {
        if (deadline.parent !== parent) return
        if (how === 'cancel') deadline.cancel(new Error('shed'))
        else deadline.dispose()
      }
      coreChannels.deadlineCreate.subscribe(onCreate)
      const timersBefore = clock.pendingTimers
      const child = Deadline.after(100, { clock, parent, signal: controller.signal })
      expect(clock.pendingTimers).toBe(timersBefore)
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
      // Not reached by the parent's end, as a deadline released any other way.
      const heard: unknown[] = []
      child.onDone((reason) => heard.push(reason))
      heard.length = 0
      parent.cancel(new Error('parent'))
      controller.abort(new Error('signal'))
      expect(heard).toEqual([])
      expect(child.done).toBe(how === 'cancel')
      if (how === 'cancel') expect((child.reason as Error).message).toBe('shed')
    })
  }
})
