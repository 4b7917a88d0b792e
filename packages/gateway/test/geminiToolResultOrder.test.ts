import type { FakeProvider } from '@hourglass/testkit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { oneProviderGateway } from './support/oneProviderGateway.js'

/**
 * An agent that runs parallel tool calls at once sends each result as it
 * finishes: OpenAI pairs them by `tool_call_id`, Gemini by place, in the
 * order of the calls. What reaches Gemini is in that order.
 */

const gateway = oneProviderGateway()
let fake: FakeProvider

beforeAll(async () => {
  fake = await gateway.one('gemini')
})

afterAll(() => gateway.close())

describe('parallel tool results sent in the order they finished, to Gemini', () => {
  it('reach it in the order of the calls', async () => {
    const call = (id: string, city: string) => ({
      id,
      type: 'function' as const,
      function: { name: 'get_weather', arguments: JSON.stringify({ city }) },
    })
    await gateway.harness.client.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'user', content: 'weather in Paris and Rome?' },
        { role: 'assistant', content: null, tool_calls: [call('c1', 'Paris'), call('c2', 'Rome')] },
        { role: 'tool', tool_call_id: 'c2', content: 'Rome: rain' },
        { role: 'tool', tool_call_id: 'c1', content: 'Paris: sunny' },
      ],
      tools: [{ type: 'function', function: { name: 'get_weather' } }],
    })
    const body = fake.requests.at(-1)?.body as {
      contents: Array<{ parts: Array<{ functionResponse?: { id: string; response: unknown } }> }>
    }
    expect(body.contents[2]?.parts.map((p) => p.functionResponse)).toEqual([
      { id: 'c1', name: 'get_weather', response: { result: 'Paris: sunny' } },
      { id: 'c2', name: 'get_weather', response: { result: 'Rome: rain' } },
    ])
  })
})
