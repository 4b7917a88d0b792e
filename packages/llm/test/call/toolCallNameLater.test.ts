import { describe, expect, it } from 'vitest'
import { callModel } from '../../src/call/callModel.js'
import type { StreamEvent } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'
import { openAIChunk as chunk, useStreamingServers } from './support/streamingServer.js'

// Some OpenAI-compatible servers open a streamed tool call with its id and
// no function name (or `name: ""`), and send the name in a later delta at
// the same index (vercel/ai #14722; a server that announces the call before
// it has parsed it). The name was taken from the opening delta only: the
// call came out named "", which no tool matches and no provider takes back.

const fakes = useFakes()
const streaming = useStreamingServers(fakes)

async function run(body: string) {
  const stream = callModel({
    models: [await streaming(body)],
    request: { messages: [user('List the files.')], maxTokens: 50, stream: true },
    limits: { admission: false },
  })
  const events: StreamEvent[] = []
  for await (const event of stream) events.push(event)
  return { events, answer: await stream.result }
}

const bash = {
  type: 'tool_call',
  id: 'call_1',
  name: 'bash',
  arguments: { command: 'ls' },
  rawArguments: '{"command":"ls"}',
}

describe('a streamed tool call whose name comes after its opening delta', () => {
  it('no name in the opening delta', async () => {
    const { events, answer } = await run(
      chunk({ role: 'assistant' }) +
        chunk({
          tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { arguments: '' } }],
        }) +
        chunk({
          tool_calls: [{ index: 0, function: { name: 'bash', arguments: '{"command":"ls"}' } }],
        }) +
        chunk({}, 'tool_calls') +
        'data: [DONE]\n\n',
    )
    expect(answer.content).toEqual([bash])
    // The events from the name on say it, for a consumer that assembles them itself.
    const calls = events.filter((e) => e.type === 'tool_call')
    expect(calls.at(-1)).toMatchObject({ name: 'bash', index: 0 })
  })

  it('`name: ""` in the opening delta, the name with the arguments', async () => {
    const { answer } = await run(
      chunk({ role: 'assistant' }) +
        chunk({
          tool_calls: [
            { index: 0, id: 'call_1', type: 'function', function: { name: '', arguments: '' } },
          ],
        }) +
        chunk({
          tool_calls: [
            { index: 0, id: 'call_1', function: { name: 'bash', arguments: '{"command":"ls"}' } },
          ],
        }) +
        chunk({}, 'tool_calls') +
        'data: [DONE]\n\n',
    )
    expect(answer.content).toEqual([bash])
  })

  it('a name already given is kept', async () => {
    const { answer } = await run(
      chunk({ role: 'assistant' }) +
        chunk({
          tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'bash' } }],
        }) +
        // A server that repeats the name with every fragment.
        chunk({
          tool_calls: [{ index: 0, function: { name: 'bash', arguments: '{"command":"ls"}' } }],
        }) +
        chunk({}, 'tool_calls') +
        'data: [DONE]\n\n',
    )
    expect(answer.content).toEqual([bash])
  })
})
