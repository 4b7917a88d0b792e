import type { FakeProvider, ProviderDialect } from '@hourglass/testkit'
import { reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

const DIALECTS: ProviderDialect[] = [
  'openai',
  'anthropic',
  'gemini',
  'qwen',
  'ernie',
  'deepseek',
  'doubao',
]

describe('the official openai client against the gateway', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  async function gatewayOverEveryDialect(): Promise<Map<ProviderDialect, FakeProvider>> {
    const providers: Record<string, unknown> = {}
    const models: Record<string, unknown> = {}
    const byDialect = new Map<ProviderDialect, FakeProvider>()
    for (const dialect of DIALECTS) {
      const { fake, entry } = await fakeProvider(dialect, [`key-${dialect}-1`])
      fakes.push(fake)
      byDialect.set(dialect, fake)
      providers[dialect] = entry
      models[`m-${dialect}`] = fallback([dialect, `${dialect}-model`])
    }
    harness = await startHarness({ providers, models })
    return byDialect
  }

  it('answers a non-streamed completion from every provider dialect, unchanged by the client', async () => {
    const fakes = await gatewayOverEveryDialect()
    for (const [dialect, fake] of fakes) {
      fake.enqueue(
        reply.text(`hello from ${dialect}`, { usage: { inputTokens: 11, outputTokens: 3 } }),
      )
      const completion = await harness!.client.chat.completions.create({
        model: `m-${dialect}`,
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'user', content: 'hi' },
        ],
        max_tokens: 50,
      })
      expect(completion.choices[0]?.message.content, dialect).toBe(`hello from ${dialect}`)
      expect(completion.choices[0]?.finish_reason, dialect).toBe('stop')
      expect(completion.model).toBe(`m-${dialect}`)
      expect(completion.usage, dialect).toMatchObject({ prompt_tokens: 11, completion_tokens: 3 })
      expect(fake.requests.at(-1)?.model, dialect).toBe(`${dialect}-model`)
      expect(fake.requests.at(-1)?.apiKey, dialect).toBe(`key-${dialect}-1`)
    }
  })

  it('streams a completion from every provider dialect as OpenAI chunks ending in [DONE]', async () => {
    const fakes = await gatewayOverEveryDialect()
    for (const [dialect, fake] of fakes) {
      fake.enqueue(reply.text(`streamed reply from ${dialect} arrives whole`))
      const stream = await harness!.client.chat.completions.create({
        model: `m-${dialect}`,
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
        stream_options: { include_usage: true },
      })
      let text = ''
      let finish: string | null | undefined
      let usage: unknown
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? ''
        finish = chunk.choices[0]?.finish_reason ?? finish
        usage = chunk.usage ?? usage
      }
      expect(text, dialect).toBe(`streamed reply from ${dialect} arrives whole`)
      expect(finish, dialect).toBe('stop')
      expect(usage, dialect).toMatchObject({ completion_tokens: expect.any(Number) })
      expect(fake.requests.at(-1)?.stream, dialect).toBe(true)
    }
  })

  it('under include_usage, every chunk but the usage one says usage: null, as OpenAI documents; without it, none has the field', async () => {
    const { fake, entry } = await fakeProvider('anthropic', ['key-a'])
    fakes.push(fake)
    harness = await startHarness({ providers: { a: entry }, models: { m: fallback(['a', 'c']) } })
    const request = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] }
    fake.enqueue(reply.text('two words', { usage: { inputTokens: 4, outputTokens: 2 } }))
    const withUsage = await harness.client.chat.completions.create({
      ...request,
      stream: true,
      stream_options: { include_usage: true },
    })
    const usages: unknown[] = []
    for await (const chunk of withUsage) usages.push('usage' in chunk ? chunk.usage : 'absent')
    expect(usages.length).toBeGreaterThan(2)
    expect(usages.slice(0, -1)).toEqual(usages.slice(0, -1).map(() => null))
    expect(usages.at(-1)).toMatchObject({ prompt_tokens: 4, completion_tokens: 2 })

    fake.enqueue(reply.text('two words'))
    const without = await harness.client.chat.completions.create({ ...request, stream: true })
    for await (const chunk of without) expect('usage' in chunk).toBe(false)
  })

  it('answers a completion cut at max_tokens as it came — 200, finish_reason length, one request upstream', async () => {
    const fakes = await gatewayOverEveryDialect()
    for (const [dialect, fake] of fakes) {
      fake.enqueue(
        reply.text('one two three', {
          finishReason: 'length',
          usage: { inputTokens: 4, outputTokens: 3 },
        }),
      )
      const completion = await harness!.client.chat.completions.create({
        model: `m-${dialect}`,
        messages: [{ role: 'user', content: 'count' }],
        max_tokens: 3,
      })
      expect(completion.choices[0]?.finish_reason, dialect).toBe('length')
      expect(completion.choices[0]?.message.content, dialect).toBe('one two three')
      expect(completion.usage, dialect).toMatchObject({ prompt_tokens: 4, completion_tokens: 3 })
      // The client's cap is its own: not raised, no "continue" turn added, nothing billed twice.
      expect(fake.requests.length, dialect).toBe(1)
    }
  })

  it('passes tool calls through in both directions', async () => {
    const { fake, entry } = await fakeProvider('anthropic', ['key-a'])
    fakes.push(fake)
    harness = await startHarness({
      providers: { claude: entry },
      models: { m: fallback(['claude', 'c']) },
    })
    fake.enqueue(
      reply.text('', {
        toolCalls: [{ id: 'call_1', name: 'weather', arguments: { city: 'Paris' } }],
      }),
    )
    const completion = await harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'weather?' }],
      tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }],
    })
    const call = completion.choices[0]?.message.tool_calls?.[0]
    expect(completion.choices[0]?.finish_reason).toBe('tool_calls')
    expect(call?.type === 'function' ? JSON.parse(call.function.arguments) : undefined).toEqual({
      city: 'Paris',
    })
    expect(fake.requests[0]?.body).toMatchObject({ tools: [{ name: 'weather' }] })
  })

  it('hands a provider’s tool-call arguments to the client as the provider wrote them, streamed or not', async () => {
    const { fake, entry } = await fakeProvider('openai', ['key-o'])
    fakes.push(fake)
    harness = await startHarness({ providers: { o: entry }, models: { m: fallback(['o', 'o-1']) } })
    // An integer past 2^53: parsed and written again, it would arrive as 12345678901234567000.
    const text = '{"id": 12345678901234567890, "tag": "x"}'
    const toolCalls = [{ id: 'call_1', name: 'lookup', arguments: undefined, argumentsJson: text }]
    const request = {
      model: 'm',
      messages: [{ role: 'user' as const, content: 'look it up' }],
      tools: [
        { type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object' } } },
      ],
    }
    fake.enqueue(reply.text('', { toolCalls }))
    const whole = await harness.client.chat.completions.create(request)
    const call = whole.choices[0]?.message.tool_calls?.[0]
    expect(call?.type === 'function' ? call.function.arguments : undefined).toBe(text)

    fake.enqueue(reply.text('', { toolCalls }))
    const stream = await harness.client.chat.completions.create({ ...request, stream: true })
    let streamed = ''
    for await (const chunk of stream) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? [])
        streamed += delta.function?.arguments ?? ''
    }
    expect(streamed).toBe(text)
  })
})
