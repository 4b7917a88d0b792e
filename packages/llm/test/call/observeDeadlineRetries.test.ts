import { Deadline } from '@hourglass/core'
import { openAIErrors, reply } from '@hourglass/testkit'
import { expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { callModel } from '../../src/call/callModel.js'
import { WaitClock } from '../support/waitClock.js'
import { useFakes, user } from './support/fakes.js'

// Dark mode reports what enforcement would do and changes no decision: a
// retry after a 500 under an observe-only deadline whose time has passed is
// sent as with no deadline at all. Before, the retry policy read the
// deadline's `remaining()` (0) and gave up — the call failed in the mode
// meant to change nothing.

const fakes = useFakes()

it('an observed, passed deadline does not stop a retry', async () => {
  const fake = await fakes.start({ dialect: 'openai' })
  fake.enqueue(openAIErrors.serverError())
  fake.setReply(reply.text('second time'))
  const model = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
  )
  const observed = Deadline.after(0, { observe: true })
  expect(observed.expired).toBe(true)
  const answer = await callModel({
    models: [model],
    request: { messages: [user('hi')], maxTokens: 16 },
    deadline: observed,
    limits: { admission: false },
    retry: { budgets: false, delay: { baseDelayMs: 1 } },
  })
  expect(answer.text).toBe('second time')
  expect(fake.requests).toHaveLength(2)
})

it('nor a wait for the cooldown a 429 asked for: admission waits it out as with no deadline', async () => {
  const clock = new WaitClock()
  const fake = await fakes.start({ dialect: 'openai' })
  fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 2 }))
  fake.setReply(reply.text('after the cooldown'))
  const model = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
  )
  // On the clock the waits run on (a wait follows its deadline's clock), passed.
  const observed = Deadline.after(10, { observe: true, clock })
  clock.advance(20)
  expect(observed.expired).toBe(true)
  const pending = callModel({
    models: [model],
    request: { messages: [user('hi')], maxTokens: 16 },
    deadline: observed,
    limits: { admission: new Admission({ clock }) },
    retry: { budgets: false },
  })
  // Advance the admission's clock each time the call waits on it, until it answers.
  const off = clock.onChange(() => {
    if (clock.pendingWaits > 0) queueMicrotask(() => clock.advance(2000))
  })
  try {
    const answer = await pending
    expect(answer.text).toBe('after the cooldown')
  } finally {
    off()
  }
  expect(fake.requests).toHaveLength(2)
})
