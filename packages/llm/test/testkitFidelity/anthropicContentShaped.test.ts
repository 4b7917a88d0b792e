import { reply } from '@hourglass/testkit'
import { expect, it } from 'vitest'
import { callModel } from '../../src/call/callModel.js'
import type { ChatMessage } from '../../src/types.js'
import { useFakes } from '../call/support/fakes.js'

/**
 * The `anthropic` fake refuses what Anthropic refuses in a conversation (an
 * empty or blank text block, a failed tool result with nothing in it, a
 * prefill ending in whitespace) and an end-user id it will not keep. A
 * history that holds each as OpenAI takes it is shaped by the Anthropic
 * builder into one the API answers, and the id is refused before sending.
 */
const fakes = useFakes()

it('a history with a blank text block, a silent failed tool result and a prefill ending in a space is answered', async () => {
  const fake = await fakes.start({ dialect: 'anthropic', reply: reply.text('blue') })
  const model = fakes.adapterFor('anthropic', fake.baseURL, 'claude-sonnet-4-5')
  const messages: ChatMessage[] = [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Look it up. ' },
        { type: 'text', text: ' \n' },
      ],
    },
    {
      role: 'assistant',
      content: [{ type: 'tool_call', id: 'call_1', name: 'lookup', arguments: {} }],
    },
    {
      role: 'tool',
      content: [{ type: 'tool_result', toolCallId: 'call_1', content: '', isError: true }],
    },
    { role: 'user', content: 'Then name a colour.' },
    { role: 'assistant', content: 'The colour is ' },
  ]
  const response = await callModel({ models: [model], request: { messages, maxTokens: 20 } })
  expect(response.text).toBe('blue')
  expect(fake.requests).toHaveLength(1)
  expect(fake.requests[0]?.outcome).toBe('success')
})

it('an email address as the end-user id (extra.user) is refused naming `user`; nothing reaches the fake', async () => {
  const fake = await fakes.start({ dialect: 'anthropic', reply: reply.text('hi') })
  const model = fakes.adapterFor('anthropic', fake.baseURL, 'claude-sonnet-4-5')
  const error = await callModel({
    models: [model],
    request: {
      messages: [{ role: 'user', content: 'hi' }],
      maxTokens: 20,
      extra: { user: 'alice@example.com' },
    },
  }).catch((e: unknown) => e)
  expect(error).toMatchObject({ code: 'INVALID_CHAT_REQUEST', field: 'user' })
  expect(fake.requests).toHaveLength(0)
})
