import type { FakeProvider, RecordedRequest } from '@hourglass/testkit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { oneProviderGateway } from './support/oneProviderGateway.js'

/**
 * An agent's last turn: the tools ran, and it asks for the summary without
 * offering them again (no `tools`). OpenAI takes that history; Anthropic's
 * Messages API answers it 400 "Requests which include `tool_use` or
 * `tool_result` blocks must define tools" — which the fake does here too.
 */

function anthropicCheck(request: RecordedRequest) {
  const body = request.body as {
    tools?: unknown[]
    messages: Array<{ content: Array<{ type: string }> }>
  }
  const toolBlocks = body.messages.some((m) =>
    m.content.some((b) => b.type === 'tool_use' || b.type === 'tool_result'),
  )
  if (toolBlocks && (body.tools === undefined || body.tools.length === 0)) {
    return {
      kind: 'error' as const,
      status: 400,
      body: {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: 'Requests which include `tool_use` or `tool_result` blocks must define tools.',
        },
      },
    }
  }
  return { kind: 'text' as const, text: 'Paris is sunny; it is noon.' }
}

const gateway = oneProviderGateway()
let fake: FakeProvider

beforeAll(async () => {
  fake = await gateway.one('anthropic')
  fake.setReply(anthropicCheck)
})

afterAll(() => gateway.close())

describe('a history with tool calls sent to Anthropic without tools', () => {
  it('is answered, the model offered none of them to call', async () => {
    for (const stream of [false, true]) {
      const params = {
        model: 'm',
        messages: [
          { role: 'user' as const, content: 'weather and time in Paris?' },
          {
            role: 'assistant' as const,
            content: null,
            tool_calls: [
              {
                id: 'call_1',
                type: 'function' as const,
                function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
              },
              {
                id: 'call_2',
                type: 'function' as const,
                function: { name: 'get_time', arguments: '{}' },
              },
            ],
          },
          { role: 'tool' as const, tool_call_id: 'call_1', content: 'sunny' },
          { role: 'tool' as const, tool_call_id: 'call_2', content: '12:00' },
          { role: 'user' as const, content: 'Sum it up in one line.' },
        ],
      }
      const text = stream
        ? (await gateway.harness.client.chat.completions.stream(params).finalChatCompletion())
            .choices[0]?.message.content
        : (await gateway.harness.client.chat.completions.create(params)).choices[0]?.message.content
      expect(text).toBe('Paris is sunny; it is noon.')
      const body = fake.requests.at(-1)?.body as Record<string, unknown>
      expect(body['tool_choice']).toEqual({ type: 'none' })
      expect((body['tools'] as Array<{ name: string }>).map((t) => t.name)).toEqual([
        'get_weather',
        'get_time',
      ])
    }
  })
})
