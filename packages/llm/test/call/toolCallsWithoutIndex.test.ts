import { describe, expect, it } from 'vitest'
import { callModel } from '../../src/call/callModel.js'
import type { StreamEvent } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'
import { openAIChunk as chunk, useStreamingServers } from './support/streamingServer.js'

const fakes = useFakes()
const streaming = useStreamingServers(fakes)

describe('streamed tool calls from servers that leave out `index` (Gemini’s OpenAI endpoint, SGLang, proxies)', () => {
  it('argument fragments that name no call continue the call before them: two calls, whole arguments', async () => {
    const model = await streaming(
      chunk({ role: 'assistant' }) +
        chunk({
          tool_calls: [
            { id: 'call_a', type: 'function', function: { name: 'weather', arguments: '' } },
          ],
        }) +
        chunk({ tool_calls: [{ function: { arguments: '{"city":' } }] }) +
        chunk({ tool_calls: [{ index: null, function: { arguments: '"Paris"}' } }] }) +
        chunk({
          tool_calls: [
            { id: 'call_b', type: 'function', function: { name: 'time', arguments: '{"tz":' } },
          ],
        }) +
        // A server that repeats the id on every fragment.
        chunk({ tool_calls: [{ id: 'call_b', function: { arguments: '"CET"}' } }] }) +
        chunk({}, 'tool_calls') +
        'data: [DONE]\n\n',
    )
    const stream = callModel({
      models: [model],
      request: { messages: [user('Weather and time in Paris?')], maxTokens: 50, stream: true },
      limits: { admission: false },
    })
    const events: StreamEvent[] = []
    for await (const event of stream) events.push(event)
    const answer = await stream.result
    expect(answer.content).toEqual([
      {
        type: 'tool_call',
        id: 'call_a',
        name: 'weather',
        arguments: { city: 'Paris' },
        rawArguments: '{"city":"Paris"}',
      },
      {
        type: 'tool_call',
        id: 'call_b',
        name: 'time',
        arguments: { tz: 'CET' },
        rawArguments: '{"tz":"CET"}',
      },
    ])
    // What a reader of the stream sees: every fragment under its call's id and name.
    const calls = events.flatMap((e) => (e.type === 'tool_call' ? [[e.id, e.name]] : []))
    expect(new Set(calls.map(([id, name]) => `${id}:${name}`))).toEqual(
      new Set(['call_a:weather', 'call_b:time']),
    )
  })

  it('whole calls without index or id, each naming its function, stay separate calls', async () => {
    const model = await streaming(
      chunk({ tool_calls: [{ function: { name: 'weather', arguments: '{"city":"Paris"}' } }] }) +
        chunk({ tool_calls: [{ function: { name: 'weather', arguments: '{"city":"Rome"}' } }] }) +
        chunk({}, 'tool_calls') +
        'data: [DONE]\n\n',
    )
    const stream = callModel({
      models: [model],
      request: { messages: [user('Weather in Paris and Rome?')], maxTokens: 50, stream: true },
      limits: { admission: false },
    })
    const answer = await stream.result
    expect(answer.content).toEqual([
      {
        type: 'tool_call',
        id: expect.stringMatching(/^call_[0-9a-f]{12}_0$/),
        name: 'weather',
        arguments: { city: 'Paris' },
        rawArguments: '{"city":"Paris"}',
      },
      {
        type: 'tool_call',
        id: expect.stringMatching(/^call_[0-9a-f]{12}_1$/),
        name: 'weather',
        arguments: { city: 'Rome' },
        rawArguments: '{"city":"Rome"}',
      },
    ])
  })
})
