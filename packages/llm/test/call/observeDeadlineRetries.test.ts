import { Deadline } from '@hourglass/core'
import { openAIErrors, reply } from '@hourglass/testkit'
import { expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
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
