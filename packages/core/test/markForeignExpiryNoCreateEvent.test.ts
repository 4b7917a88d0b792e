import { coreChannels, type DeadlineCreateMessage, markForeignExpiry } from '@hourglass/core'
import { expect, it } from 'vitest'

// The first markForeignExpiry() made its sentinel deadline (`elsewhere`, no
// deadline of anyone's) with Deadline.never: subscribers to
// hourglass:deadline:create saw a phantom deadline, never ended. The
// sentinel is made once per process: in a worker shared with other files
// this guards the case only when it is the first mark there.
it('publishes no hourglass:deadline:create for the sentinel it marks errors with', () => {
  const created: string[] = []
  const onCreate = (m: DeadlineCreateMessage) => created.push(m.deadline.name ?? '(nameless)')
  coreChannels.deadlineCreate.subscribe(onCreate)
  try {
    markForeignExpiry(new Error('a remote cap'))
    markForeignExpiry(new Error('another'))
  } finally {
    coreChannels.deadlineCreate.unsubscribe(onCreate)
  }
  expect(created).toEqual([])
})
