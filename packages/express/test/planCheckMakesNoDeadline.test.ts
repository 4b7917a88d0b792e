import { coreChannels, type DeadlineCreateMessage, ManualClock } from '@hourglass/core'
import { expect, it } from 'vitest'
import { deadline } from '../src/index.js'

// deadline({ plan }) checks the plan when it is made, so a bad one fails at
// boot. It checked it on a deadline made for the purpose (Deadline.never()),
// published on hourglass:deadline:create as any deadline is and never ended:
// a subscriber counting deadlines, or a tracer drawing them, saw a phantom
// of no request's for every deadline({ plan }) the app mounted.
it('checking the plan at boot publishes no deadline', () => {
  const created: DeadlineCreateMessage[] = []
  const onCreate = (message: DeadlineCreateMessage) => created.push(message)
  coreChannels.deadlineCreate.subscribe(onCreate)
  try {
    deadline({ clock: new ManualClock(), plan: { preprocess: 0.2, model: 0.8 } })
    expect(() => deadline({ plan: { model: -1 } })).toThrow(
      /slice "model" must be a positive share/,
    )
  } finally {
    coreChannels.deadlineCreate.unsubscribe(onCreate)
  }
  expect(created).toEqual([])
})
