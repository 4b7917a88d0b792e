import type { FakeProvider, RecordedRequest } from '@hourglass/testkit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { oneProviderGateway } from './support/oneProviderGateway.js'

/**
 * A conversation whose tool calls another provider made (Kimi's ids are
 * `functions.get_weather:0`) sent on to a model routed to Anthropic: its
 * Messages API refuses a `tool_use.id` outside `^[a-zA-Z0-9_-]+$` with a 400
 * that no fallback follows, and so is one that repeats an id (servers that
 * number each answer's calls send `call_0` every turn). The fake answers as
 * Anthropic does.
 */

const PATTERN = /^[a-zA-Z0-9_-]+$/

function anthropicCheck(request: RecordedRequest) {
  const turns = (request.body as { messages: Array<{ content: Array<Record<string, unknown>> }> })
    .messages
  const seen = new Set<unknown>()
  for (const [i, turn] of turns.entries()) {
    for (const [j, block] of turn.content.entries()) {
      if (block['type'] === 'tool_use' && seen.has(block['id'])) {
        return {
          kind: 'error' as const,
          status: 400,
          body: {
            type: 'error',
            error: {
              type: 'invalid_request_error',
              message: `messages.${i}.content.${j}: \`tool_use\` ids must be unique`,
            },
          },
        }
      }
      if (block['type'] === 'tool_use') seen.add(block['id'])
      const id = block['type'] === 'tool_use' ? block['id'] : block['tool_use_id']
      if (typeof id === 'string' && !PATTERN.test(id)) {
        const field = block['type'] === 'tool_use' ? 'tool_use.id' : 'tool_result.tool_use_id'
        return {
          kind: 'error' as const,
          status: 400,
          body: {
            type: 'error',
            error: {
              type: 'invalid_request_error',
              message: `messages.${i}.content.${j}.${field}: String should match pattern '^[a-zA-Z0-9_-]+$'`,
            },
          },
        }
      }
    }
  }
  return { kind: 'text' as const, text: 'Paris is sunny.' }
}

const gateway = oneProviderGateway()
let fake: FakeProvider

beforeAll(async () => {
  fake = await gateway.one('anthropic')
  fake.setReply(anthropicCheck)
})

afterAll(() => gateway.close())

describe("another provider's tool-call ids sent back to Anthropic", () => {
  it('are answered, each result still paired with its call', async () => {
    const answer = await gateway.harness.client.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'user', content: 'weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'functions.get_weather:0',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
            {
              id: 'functions.get_weather:1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Rome"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'functions.get_weather:1', content: 'Rome: rain' },
        { role: 'tool', tool_call_id: 'functions.get_weather:0', content: 'Paris: sunny' },
      ],
      tools: [{ type: 'function', function: { name: 'get_weather' } }],
    })
    expect(answer.choices[0]?.message.content).toBe('Paris is sunny.')
    const body = fake.requests.at(-1)?.body as {
      messages: Array<{ content: Array<Record<string, unknown>> }>
    }
    const calls = body.messages[1]?.content.map((b) => b['id'])
    const results = body.messages[2]?.content.map((b) => b['tool_use_id'])
    // The results came in the other order: each still names its own call.
    expect(results).toEqual([calls?.[1], calls?.[0]])
    expect(new Set(calls).size).toBe(2)
  })

  it('are answered when they repeat across turns (call_0 every turn), each result with its call', async () => {
    const call = (city: string) => ({
      id: 'call_0',
      type: 'function' as const,
      function: { name: 'get_weather', arguments: JSON.stringify({ city }) },
    })
    await gateway.harness.client.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'user', content: 'weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [call('Paris')] },
        { role: 'tool', tool_call_id: 'call_0', content: 'Paris: sunny' },
        { role: 'user', content: 'and Rome?' },
        { role: 'assistant', content: null, tool_calls: [call('Rome')] },
        { role: 'tool', tool_call_id: 'call_0', content: 'Rome: rain' },
      ],
      tools: [{ type: 'function', function: { name: 'get_weather' } }],
    })
    const body = fake.requests.at(-1)?.body as {
      messages: Array<{ content: Array<Record<string, unknown>> }>
    }
    const blocks = body.messages.flatMap((m) => m.content)
    const callFor = (city: string) =>
      blocks.find((b) => (b['input'] as { city?: string } | undefined)?.city === city)?.['id']
    const resultFor = (text: string) => blocks.find((b) => b['content'] === text)?.['tool_use_id']
    expect(callFor('Paris')).not.toBe(callFor('Rome'))
    expect(resultFor('Paris: sunny')).toBe(callFor('Paris'))
    expect(resultFor('Rome: rain')).toBe(callFor('Rome'))
  })
})
