import type { FakeProvider, ProviderDialect } from '@hourglass/testkit'
import { reply } from '@hourglass/testkit'
import type OpenAI from 'openai'
import { zodFunction, zodResponseFormat } from 'openai/helpers/zod'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

const DIALECTS: ProviderDialect[] = ['openai', 'deepseek', 'anthropic', 'gemini']

const Weather = z.object({ city: z.string() })

/**
 * openai-node's helpers add fields of their own to the message they hand
 * back: `.stream()`'s `finalMessage()` and `finalChatCompletion()` and
 * `.parse()` set `message.parsed`, and `.parse()` with `zodFunction` tools
 * sets `tool_calls[].function.parsed_arguments`. The usual chat loop pushes
 * that message back into `messages` as it came (OpenAI takes it); the
 * gateway must take it too, and send those fields to no provider.
 */
describe("a message from openai-node's helpers, pushed back as it came", () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  async function gatewayOver(dialects: ProviderDialect[]) {
    const providers: Record<string, unknown> = {}
    const models: Record<string, unknown> = {}
    const byDialect = new Map<ProviderDialect, FakeProvider>()
    for (const dialect of dialects) {
      const { fake, entry } = await fakeProvider(dialect, [`key-${dialect}`])
      fakes.push(fake)
      byDialect.set(dialect, fake)
      providers[dialect] = entry
      models[`m-${dialect}`] = fallback([dialect, `${dialect}-model`])
    }
    harness = await startHarness({ providers, models })
    return byDialect
  }

  it("`.stream()`'s finalMessage() (with its `parsed: null`) is accepted, whatever the dialect", async () => {
    for (const [dialect, fake] of await gatewayOver(DIALECTS)) {
      fake.enqueue(reply.text('the answer'), reply.text('second answer'))
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }]
      const answer = await harness!.client.chat.completions
        .stream({ model: `m-${dialect}`, messages })
        .finalMessage()
      expect(answer, dialect).toHaveProperty('parsed', null)
      messages.push(answer, { role: 'user', content: 'and then?' })
      const second = await harness!.client.chat.completions.create({
        model: `m-${dialect}`,
        messages,
      })
      expect(second.choices[0]?.message.content, dialect).toBe('second answer')
      const sent = JSON.stringify(fake.requests.at(-1)?.body)
      expect(sent, dialect).toContain('the answer')
      expect(sent, dialect).not.toContain('parsed')
    }
  })

  it('`.parse()` with a response format: the parsed object goes back, and no further', async () => {
    const fake = (await gatewayOver(['openai'])).get('openai')!
    fake.enqueue(reply.text('{"city":"Paris"}'), reply.text('second answer'))
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'where?' }]
    const first = await harness!.client.chat.completions.parse({
      model: 'm-openai',
      messages,
      response_format: zodResponseFormat(Weather, 'weather'),
    })
    const answer = first.choices[0]!.message
    expect(answer.parsed).toEqual({ city: 'Paris' })
    messages.push(answer, { role: 'user', content: 'and then?' })
    const second = await harness!.client.chat.completions.create({ model: 'm-openai', messages })
    expect(second.choices[0]?.message.content).toBe('second answer')
    const sent = fake.requests.at(-1)?.body as { messages: unknown[] }
    expect(sent.messages[1]).toEqual({ role: 'assistant', content: '{"city":"Paris"}' })
  })

  it("`.parse()` with zodFunction tools: each call's parsed_arguments go back, and no further", async () => {
    const fake = (await gatewayOver(['openai'])).get('openai')!
    fake.enqueue(
      reply.text('', {
        toolCalls: [{ id: 'call_1', name: 'weather', arguments: { city: 'Paris' } }],
        finishReason: 'tool_calls',
      }),
      reply.text('sunny'),
    )
    const tools = [zodFunction({ name: 'weather', parameters: Weather })]
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'weather?' }]
    const first = await harness!.client.chat.completions.parse({
      model: 'm-openai',
      messages,
      tools,
    })
    const answer = first.choices[0]!.message
    expect(answer.tool_calls?.[0]?.function).toHaveProperty('parsed_arguments', { city: 'Paris' })
    messages.push(answer, { role: 'tool', tool_call_id: 'call_1', content: 'sunny, 21 °C' })
    const second = await harness!.client.chat.completions.parse({
      model: 'm-openai',
      messages,
      tools,
    })
    expect(second.choices[0]?.message.content).toBe('sunny')
    const sent = fake.requests.at(-1)?.body as { messages: unknown[] }
    expect(sent.messages[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: 'call_1',
          type: 'function',
          function: { name: 'weather', arguments: '{"city":"Paris"}' },
        },
      ],
    })
  })

  it('any JSON value is taken; one nested too deep is a 400 naming it, with nothing sent', async () => {
    const fake = (await gatewayOver(['openai'])).get('openai')!
    const post = (assistant: Record<string, unknown>) =>
      fetch(`${harness!.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'm-openai',
          messages: [
            { role: 'user', content: 'hi' },
            { role: 'assistant', content: 'a', ...assistant },
            { role: 'user', content: 'again' },
          ],
        }),
      })
    for (const parsed of [null, { a: [1] }, [1, 2], 'text', 3, true]) {
      fake.enqueue(reply.text('ok'))
      expect((await post({ parsed })).status, JSON.stringify(parsed)).toBe(200)
    }
    let deep: unknown = 1
    for (let i = 0; i < 100; i++) deep = [deep]
    const sentBefore = fake.requests.length
    const refused = await post({ parsed: deep })
    expect(refused.status).toBe(400)
    expect(((await refused.json()) as { error: { param: string } }).error.param).toBe(
      'messages[1].parsed',
    )
    expect(fake.requests.length).toBe(sentBefore)
  })

  it("openai-python's `message.model_dump()` (every unset field as null: tool_calls, audio, function_call) is taken as not set; a set audio or function_call is still refused", async () => {
    const byDialect = await gatewayOver(['openai', 'anthropic'])
    const post = (model: string, assistant: Record<string, unknown>) =>
      fetch(`${harness!.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model,
          messages: [
            { role: 'user', content: 'hi' },
            assistant,
            { role: 'user', content: 'again' },
          ],
        }),
      })
    // pydantic's model_dump() of a ChatCompletionMessage the gateway answered.
    const dumped = {
      content: 'the answer',
      refusal: null,
      role: 'assistant',
      annotations: null,
      audio: null,
      function_call: null,
      tool_calls: null,
    }
    for (const [dialect, fake] of byDialect) {
      fake.enqueue(reply.text('ok'))
      const res = await post(`m-${dialect}`, dumped)
      expect(res.status, `${dialect}: ${await res.clone().text()}`).toBe(200)
      const sent = JSON.stringify(fake.requests.at(-1)?.body)
      expect(sent, dialect).toContain('the answer')
      for (const field of ['audio', 'function_call', 'tool_calls', 'annotations']) {
        expect(sent, dialect).not.toContain(`"${field}"`)
      }
    }
    const fake = byDialect.get('openai')!
    const sentBefore = fake.requests.length
    for (const [field, value] of [
      ['audio', { id: 'audio_1' }],
      ['function_call', { name: 'f', arguments: '{}' }],
    ] as const) {
      const refused = await post('m-openai', { ...dumped, [field]: value })
      expect(refused.status, field).toBe(400)
      const { error } = (await refused.json()) as { error: { param: string } }
      expect(error.param, field).toBe(`messages[1].${field}`)
    }
    expect(fake.requests.length).toBe(sentBefore)
  })

  it("openai-python's stream helper: the index it leaves on each tool call of the message sent back is taken and sent to no provider", async () => {
    const fake = (await gatewayOver(['openai'])).get('openai')!
    fake.enqueue(reply.text('sunny'))
    const res = await fetch(`${harness!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm-openai',
        messages: [
          { role: 'user', content: 'weather?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                index: 0,
                id: 'call_1',
                type: 'function',
                function: { name: 'weather', arguments: '{}', parsed_arguments: {} },
              },
            ],
          },
          { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
        ],
      }),
    })
    expect(res.status, await res.clone().text()).toBe(200)
    const sent = fake.requests.at(-1)?.body as { messages: { tool_calls?: object[] }[] }
    expect(sent.messages[1]?.tool_calls?.[0]).not.toHaveProperty('index')
  })
})
