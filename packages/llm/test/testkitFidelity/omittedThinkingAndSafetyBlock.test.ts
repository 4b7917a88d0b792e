import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { callModel } from '../../src/call/callModel.js'
import type { ChatRequest, ContentBlock } from '../../src/types.js'
import { useFakes, user } from '../call/support/fakes.js'

/**
 * What the fakes now send as the real APIs do: Claude 5's thinking without
 * a `thinking` field, its text omitted (an empty `thinking` and its
 * signature), and Gemini's safety block (a candidate without `content`).
 * Hourglass reads both, and sends the signed block back in a tool loop.
 */
const fakes = useFakes()

const tools = [{ name: 'weather', parameters: { type: 'object', properties: {} } }]

describe('Claude 5: thinking by default, its text omitted', () => {
  it.each([false, true])(
    'stream %s: the signed empty block is read and sent back in the loop',
    async (stream) => {
      const fake = await fakes.start({
        dialect: 'anthropic',
        reply: reply.text('', {
          thinking: 'The user wants the weather.',
          signature: 'sig-claude-5',
          toolCalls: [{ name: 'weather', arguments: { city: 'Paris' } }],
        }),
      })
      const model = fakes.adapterFor('anthropic', fake.baseURL, 'claude-sonnet-5')
      const ask = (request: ChatRequest) =>
        stream
          ? callModel({ models: [model], request: { ...request, stream: true } }).result
          : callModel({ models: [model], request })
      const first = await ask({ messages: [user('Weather?')], maxTokens: 256, tools })
      expect(first.content[0]).toEqual({
        type: 'thinking',
        thinking: '',
        signature: 'sig-claude-5',
        signedBy: 'claude-sonnet-5@anthropic',
      })
      expect(first.finishReason).toBe('tool_calls')
      const call = first.content.find((b) => b.type === 'tool_call') as Extract<
        ContentBlock,
        { type: 'tool_call' }
      >
      fake.enqueue(reply.text('Sunny.'))
      const second = await ask({
        messages: [
          user('Weather?'),
          { role: 'assistant', content: first.content },
          {
            role: 'user',
            content: [{ type: 'tool_result', toolCallId: call.id, content: 'sunny' }],
          },
        ],
        maxTokens: 256,
        tools,
      })
      expect(second.text).toBe('Sunny.')
      const sent = fake.requests[1]?.body as { messages: { content: unknown[] }[] }
      expect(sent.messages[1]?.content[0]).toEqual({
        type: 'thinking',
        thinking: '',
        signature: 'sig-claude-5',
      })
    },
  )
})

describe("Gemini's safety block", () => {
  it.each([false, true])(
    'stream %s: a content_filter finish, billed by the counts',
    async (stream) => {
      const fake = await fakes.start({
        dialect: 'gemini',
        reply: reply.text('Step one: the', {
          finishReason: 'content_filter',
          usage: { inputTokens: 9 },
        }),
      })
      const model = fakes.adapterFor('gemini', fake.baseURL, 'gemini-2.5-flash')
      const request = { messages: [user('How?')], maxTokens: 64 }
      const answer = stream
        ? await callModel({ models: [model], request: { ...request, stream: true } }).result
        : await callModel({ models: [model], request })
      expect(answer.finishReason).toBe('content_filter')
      // Whole, the blocked text is withheld; streamed, what went out before the block is kept.
      expect(answer.text).toBe(stream ? 'Step one: the' : '')
      expect(answer.usage).toMatchObject({ inputTokens: 9, outputTokens: 4 })
    },
  )
})
