import OpenAI from 'openai'
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  type FakeProvider,
  openAIErrors,
  reply,
  startFakeProvider,
} from '../../src/providers/index.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

describe('the official openai client against the fake', () => {
  it('reads a non-streamed answer, a streamed answer with usage, and a typed 429', async () => {
    fake = await startFakeProvider({ reply: reply.text('Bonjour 👋 世界', { splitBytes: 3 }) })
    const client = new OpenAI({ baseURL: fake.baseURL, apiKey: 'sk-sdk', maxRetries: 0 })
    const completion = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(completion.choices[0]!.message.content).toBe('Bonjour 👋 世界')

    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    })
    let text = ''
    let usage: unknown
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ''
      usage ??= chunk.usage ?? undefined
    }
    expect(text).toBe('Bonjour 👋 世界')
    expect(usage).toMatchObject({ completion_tokens: 4 })

    fake.enqueue(openAIErrors.rateLimited({ retryAfterS: 1 }))
    const error = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.RateLimitError)
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).code).toBe('rate_limit_exceeded')
    expect(fake.requests.map((r) => r.apiKey)).toEqual(['sk-sdk', 'sk-sdk', 'sk-sdk'])
  })

  it('reads tool calls, streamed (through the stream helper’s accumulator) and not, in every OpenAI-compatible dialect', async () => {
    const tools = [
      {
        type: 'function' as const,
        function: { name: 'get_weather', parameters: { type: 'object', properties: {} } },
      },
    ]
    const calls = [
      { name: 'get_weather', arguments: { city: 'Paris' } },
      { name: 'get_time', arguments: { tz: 'UTC' } },
    ]
    for (const dialect of ['openai', 'deepseek', 'qwen', 'doubao', 'ernie'] as const) {
      fake = await startFakeProvider({
        dialect,
        reply: reply.text('', { thinking: 'hm', toolCalls: calls }),
      })
      const client = new OpenAI({ baseURL: fake.baseURL, apiKey: 'sk-sdk', maxRetries: 0 })
      const params = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }], tools }
      const expected = [
        { type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { type: 'function', function: { name: 'get_time', arguments: '{"tz":"UTC"}' } },
      ]
      const plain = await client.chat.completions.create(params)
      expect(plain.choices[0]).toMatchObject({
        finish_reason: 'tool_calls',
        message: { content: null, tool_calls: expected },
      })
      const streamed = await client.chat.completions
        .stream({ ...params, stream_options: { include_usage: true } })
        .finalChatCompletion()
      expect(streamed.choices[0]).toMatchObject({
        finish_reason: 'tool_calls',
        message: { tool_calls: expected },
      })
      expect(streamed.usage).toMatchObject({ completion_tokens: expect.any(Number) })
      await fake.close()
      fake = undefined
    }
  })

  it('reads a DeepSeek answer preceded by keep-alive blank lines, as DeepSeek says the SDK does', async () => {
    fake = await startFakeProvider({
      dialect: 'deepseek',
      reply: reply.text('答案', { firstTokenDelayMs: 120, keepAliveEveryMs: 30 }),
    })
    const client = new OpenAI({ baseURL: fake.baseURL, apiKey: 'sk-sdk', maxRetries: 0 })
    const completion = await client.chat.completions.create({
      model: 'deepseek-chat',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(completion.choices[0]!.message.content).toBe('答案')
  })

  // A test that fakes time (to skip the client's retry back-off) and reads
  // an answer cut mid-character: the pieces waited on a faked setImmediate,
  // and the call hung until the test timed out.
  it('reads an answer cut by splitBytes under vi.useFakeTimers()', async () => {
    fake = await startFakeProvider({ reply: reply.text('Bonjour 👋 世界', { splitBytes: 3 }) })
    const client = new OpenAI({ baseURL: fake.baseURL, apiKey: 'sk-sdk', maxRetries: 0 })
    vi.useFakeTimers()
    try {
      const completion = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'hi' }],
      })
      expect(completion.choices[0]!.message.content).toBe('Bonjour 👋 世界')
    } finally {
      vi.useRealTimers()
    }
  })
})
