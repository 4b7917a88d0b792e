import { faultServer, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { gemini } from '../../src/adapters/gemini.js'
import { callModel } from '../../src/call/callModel.js'
import type { StreamEvent } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

// Two parallel calls a server gave one id: the stream's calls were joined by
// id, so Anthropic's and Gemini's answers came out as one call with both
// arguments run together (`{"path":"a.txt"}{"path":"b.txt"}`, unparsable).
// Each call's events now carry its `index` in the answer, as OpenAI's do.

const fakes = useFakes()
const closing: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(closing.splice(0).map((s) => s.close()))
})

const request = { messages: [user('Read both files.')], maxTokens: 100, stream: true as const }

async function streamed(model: Parameters<typeof callModel>[0]['models'][number]) {
  const stream = callModel({ models: [model], request, limits: { admission: false } })
  const events: StreamEvent[] = []
  for await (const event of stream) events.push(event)
  const indexes = events.flatMap((e) => (e.type === 'tool_call' ? [e.index] : []))
  return { answer: await stream.result, indexes }
}

const call = (id: string, path: string) => ({
  type: 'tool_call',
  id,
  name: 'read',
  arguments: { path },
})

describe('two streamed calls with one id stay two calls', () => {
  it('Anthropic: each tool_use block is a call of its own, numbered in the answer', async () => {
    const fake = await fakes.start({
      dialect: 'anthropic',
      reply: reply.text('', {
        toolCalls: [
          { id: 'toolu_same', name: 'read', arguments: { path: 'a.txt' } },
          { id: 'toolu_same', name: 'read', arguments: { path: 'b.txt' } },
        ],
      }),
    })
    const { answer, indexes } = await streamed(
      fakes.adapterFor('anthropic', fake.baseURL, 'claude-sonnet-4-5'),
    )
    expect(answer.finishReason).toBe('tool_calls')
    expect(answer.content).toEqual([
      expect.objectContaining(call('toolu_same', 'a.txt')),
      expect.objectContaining(call('toolu_same', 'b.txt')),
    ])
    // Each call's block opening, its empty first piece of input and its one parameter whole
    // (the real API sends a tool's input a complete parameter at a time), in turn.
    expect(indexes).toEqual([0, 0, 0, 1, 1, 1])
  })

  it('Gemini: each functionCall part is a call of its own, whatever its id', async () => {
    const part = (path: string) => ({ functionCall: { id: 'fc_1', name: 'read', args: { path } } })
    const chunk = {
      candidates: [
        { content: { role: 'model', parts: [part('a.txt'), part('b.txt')] }, finishReason: 'STOP' },
      ],
      usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 8, totalTokenCount: 13 },
    }
    const server = await faultServer({
      type: 'respond',
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body: `data: ${JSON.stringify(chunk)}\r\n\r\n`,
    })
    closing.push(server)
    const model = fakes.adapter(
      gemini({ baseURL: server.url, apiKey: 'k', model: 'gemini-2.5-flash' }),
    )
    const { answer, indexes } = await streamed(model)
    expect(answer.finishReason).toBe('tool_calls')
    expect(answer.content).toEqual([
      expect.objectContaining(call('fc_1', 'a.txt')),
      expect.objectContaining(call('fc_1', 'b.txt')),
    ])
    expect(indexes).toEqual([0, 1])
  })
})
