/**
 * Anthropic's streamed tool_use input, event by event, as the API sends it.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { dataOf, readSse } from './sse.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

interface Event {
  type: string
  index?: number
  delta?: { type: string; partial_json?: string }
}

describe('Anthropic streamed tool_use input', () => {
  // docs.claude.com streaming page, "Streaming request with tool use": after
  // `content_block_start` with `"input":{}` the first delta is
  // `{"type":"input_json_delta","partial_json":""}`, then the pieces
  // (`{\"location\":`, ` \"San`, …); Claude Code's stream-json shows the same
  // empty leading fragment on every tool call.
  it('opens each tool_use block with an empty partial_json, then the pieces', async () => {
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: reply.text('Checking', {
        toolCalls: [
          { id: 'toolu_a', name: 'get_weather', arguments: { location: 'San Francisco' } },
          { id: 'toolu_b', name: 'noop', arguments: {} },
        ],
      }),
    })
    const res = await fetch(`${fake.url}/v1/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': 'sk-test',
        'anthropic-version': '2023-06-01',
      },
      body: JSON.stringify({
        model: 'claude',
        max_tokens: 100,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    })
    const events = dataOf<Event>(await readSse(res))
    for (const index of [1, 2]) {
      const deltas = events
        .filter((e) => e.type === 'content_block_delta' && e.index === index)
        .map((e) => e.delta!)
      expect(deltas[0]).toEqual({ type: 'input_json_delta', partial_json: '' })
      expect(deltas.slice(1).every((d) => d.partial_json !== '')).toBe(true)
    }
    const input = (index: number) =>
      events
        .filter((e) => e.type === 'content_block_delta' && e.index === index)
        .map((e) => e.delta!.partial_json)
        .join('')
    expect(JSON.parse(input(1))).toEqual({ location: 'San Francisco' })
    expect(JSON.parse(input(2))).toEqual({})
  })
})
