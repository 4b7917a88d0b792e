import { faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { callModel } from '../../src/call/callModel.js'
import type { ChatResponse } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const servers: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

const DATA = 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP'
const event = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

/** Anthropic's answer: reasoning its safety systems encrypted, then a tool call. */
const streamed =
  event('message_start', {
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      content: [],
      model: 'claude',
      usage: { input_tokens: 5, output_tokens: 1 },
    },
  }) +
  event('content_block_start', {
    index: 0,
    content_block: { type: 'redacted_thinking', data: DATA },
  }) +
  event('content_block_stop', { index: 0 }) +
  event('content_block_start', {
    index: 1,
    content_block: { type: 'tool_use', id: 'toolu_1', name: 'weather', input: {} },
  }) +
  event('content_block_delta', {
    index: 1,
    delta: { type: 'input_json_delta', partial_json: '{"city":"Paris"}' },
  }) +
  event('content_block_stop', { index: 1 }) +
  event('message_delta', { delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 9 } }) +
  event('message_stop', {})
const whole = JSON.stringify({
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude',
  stop_reason: 'tool_use',
  usage: { input_tokens: 5, output_tokens: 9 },
  content: [
    { type: 'redacted_thinking', data: DATA },
    { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
  ],
})
const done = JSON.stringify({
  id: 'msg_2',
  type: 'message',
  role: 'assistant',
  model: 'claude',
  stop_reason: 'end_turn',
  usage: { input_tokens: 5, output_tokens: 1 },
  content: [{ type: 'text', text: 'Sunny.' }],
})

describe('Anthropic redacted thinking', () => {
  it.each([false, true])(
    'is kept (stream: %s) and goes back as the same redacted_thinking block before the tool call',
    async (stream) => {
      const bodies: Array<{ stream?: boolean; messages: unknown[] }> = []
      const server = await faultServer((_request, i) =>
        i === 0
          ? stream
            ? { type: 'respond', headers: { 'content-type': 'text/event-stream' }, body: streamed }
            : { type: 'respond', headers: { 'content-type': 'application/json' }, body: whole }
          : { type: 'respond', headers: { 'content-type': 'application/json' }, body: done },
      )
      servers.push(server)
      server.server.on('request', (req) => {
        let text = ''
        req.on('data', (c: Buffer) => {
          text += c
        })
        req.on('end', () => bodies.push(JSON.parse(text)))
      })
      const model = fakes.adapter(anthropic({ baseURL: server.url, apiKey: 'sk', model: 'claude' }))
      const ask = [user('Weather in Paris?')]
      let answer: ChatResponse
      if (stream) {
        const call = callModel({
          models: [model],
          request: { messages: ask, maxTokens: 64, stream: true },
          limits: { admission: false },
        })
        for await (const _ of call) {
          // drained
        }
        answer = await call.result
      } else {
        answer = await callModel({
          models: [model],
          request: { messages: ask, maxTokens: 64 },
          limits: { admission: false },
        })
      }
      // Before: streamed, the block was dropped ([tool_call] alone); whole, it had no `redacted`.
      expect(answer.content).toEqual([
        { type: 'thinking', thinking: '', signature: DATA, redacted: true },
        { type: 'tool_call', id: 'toolu_1', name: 'weather', arguments: { city: 'Paris' } },
      ])
      await callModel({
        models: [model],
        request: {
          messages: [
            ...ask,
            { role: 'assistant', content: answer.content },
            {
              role: 'tool',
              content: [{ type: 'tool_result', toolCallId: 'toolu_1', content: 'sunny' }],
            },
          ],
          maxTokens: 64,
        },
        limits: { admission: false },
      })
      // Before: `{ type: 'thinking', thinking: '', signature: DATA }`, or nothing at all.
      expect(bodies[1]?.messages[1]).toEqual({
        role: 'assistant',
        content: [
          { type: 'redacted_thinking', data: DATA },
          { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
        ],
      })
    },
  )
})
