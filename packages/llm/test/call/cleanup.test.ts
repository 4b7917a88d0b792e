import { getEventListeners } from 'node:events'
import { Deadline } from '@hourglass/core'
import { openAIErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { FAST_RETRIES, useFakes, user } from './support/fakes.js'

const fakes = useFakes()

describe('cleanup', () => {
  it('leaves no abort listener on the deadline or the caller’s signal after retries, streams and failures', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(
      openAIErrors.serverError(),
      reply.text('whole'),
      openAIErrors.serverError(),
      reply.text('streamed'),
      openAIErrors.badRequest(),
    )
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    using deadline = Deadline.after(10_000)
    const controller = new AbortController()
    const common = {
      models: [model],
      deadline,
      signal: controller.signal,
      retry: { delay: FAST_RETRIES },
    }
    const messages = [user('hi')]
    await callModel({ ...common, request: { messages, maxTokens: 8 } })
    await callModel({
      ...common,
      request: { messages, maxTokens: 8, stream: true },
      firstTokenTimeoutMs: 5000,
    }).result
    await callModel({ ...common, request: { messages, maxTokens: 8 } }).catch(() => {})
    expect(fake.requests).toHaveLength(5)
    expect(getEventListeners(deadline.signal, 'abort')).toHaveLength(0)
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })

  it('the caller’s abort ends a retry wait at once, with the caller’s reason', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: openAIErrors.rateLimited({ retryAfterMs: 5000 }),
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const controller = new AbortController()
    const call = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 8 },
      signal: controller.signal,
      onAttempt: (r) => {
        if (r.decision === 'retry') controller.abort(new Error('user left'))
      },
    })
    await expect(call).rejects.toThrow('user left')
    expect(fake.requests).toHaveLength(1)
  })
})
