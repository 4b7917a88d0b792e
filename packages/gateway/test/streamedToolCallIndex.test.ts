import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { dialectGateway } from './support/dialectGateway.js'

// Two parallel tool calls an upstream gave one id (an Anthropic-compatible
// server's; or none): the gateway's OpenAI stream numbered its calls by id,
// and Anthropic's and Gemini's parsers gave none an `index`, so the official
// client read one call whose arguments were both joined
// (`{"path":"a.txt"}{"path":"b.txt"}`). Each call keeps one `index` across
// its deltas; distinct calls get distinct ones. (The testkit's Gemini fake
// sends no call ids, as the Gemini API mostly does not: its case here guards
// calls without one; two Gemini calls sharing an id are llm's
// test/call/parallelCallsOneId.test.ts.)

const gw = dialectGateway(['anthropic', 'gemini'])

const tools = [
  {
    type: 'function' as const,
    function: {
      name: 'read',
      parameters: { type: 'object', properties: { path: { type: 'string' } } },
    },
  },
]

async function finalToolCalls(model: string) {
  const stream = gw.client.chat.completions.stream({
    model,
    messages: [{ role: 'user', content: 'Read both files.' }],
    tools,
  })
  const indexes: number[] = []
  stream.on('chunk', (chunk) => {
    for (const call of chunk.choices[0]?.delta.tool_calls ?? []) indexes.push(call.index)
  })
  const done = await stream.finalChatCompletion()
  expect(done.choices[0]?.finish_reason).toBe('tool_calls')
  return { calls: done.choices[0]?.message.tool_calls, indexes }
}

const twoReads = (id?: string) =>
  reply.text('', {
    toolCalls: [
      { ...(id === undefined ? {} : { id }), name: 'read', arguments: { path: 'a.txt' } },
      { ...(id === undefined ? {} : { id }), name: 'read', arguments: { path: 'b.txt' } },
    ],
  })

const read = (id: unknown, path: string) =>
  expect.objectContaining({
    id,
    type: 'function',
    function: expect.objectContaining({ name: 'read', arguments: JSON.stringify({ path }) }),
  })

describe('two streamed tool calls with one id, or none, reach the official client as two calls', () => {
  it('from Anthropic: indexes 0 and 1, each with its own arguments', async () => {
    gw.fake('anthropic').enqueue(twoReads('toolu_same'))
    const { calls, indexes } = await finalToolCalls('m-anthropic')
    expect(calls).toEqual([read('toolu_same', 'a.txt'), read('toolu_same', 'b.txt')])
    expect(new Set(indexes)).toEqual(new Set([0, 1]))
  })

  it('from Gemini, whose calls come without an id: two calls, two ids', async () => {
    gw.fake('gemini').enqueue(twoReads())
    const { calls, indexes } = await finalToolCalls('m-gemini')
    expect(calls).toEqual([read(expect.any(String), 'a.txt'), read(expect.any(String), 'b.txt')])
    expect(calls?.[0]?.id).not.toBe(calls?.[1]?.id)
    expect(indexes).toEqual([0, 1])
  })
})
