import { wait } from '@hourglass/core'
import { expect, it } from 'vitest'

// wait() promises to release its `wakeOn` subscription the moment it
// settles. A subscription that wakes while it is being made — a slot that is
// already free, a cooldown already over — settled the wait before its
// unsubscribe had been returned, and that unsubscribe was never called: the
// listener stayed on the emitter for good, one per wait.

it('calls the unsubscribe of a wakeOn that wakes it while subscribing', async () => {
  const listeners = new Set<() => void>()
  const result = await wait(10_000, {
    wakeOn: (wake) => {
      listeners.add(wake)
      wake() // already free
      return () => listeners.delete(wake)
    },
  })
  expect(result).toBe('woken')
  expect(listeners.size).toBe(0)
})
