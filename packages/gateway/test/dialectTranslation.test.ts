import type { ProviderDialect } from '@hourglass/testkit'
import { reply } from '@hourglass/testkit'
import OpenAI from 'openai'
import { zodResponseFormat } from 'openai/helpers/zod'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { dialectGateway } from './support/dialectGateway.js'
import { fallback, startHarness } from './support/harness.js'

/**
 * What the official client's requests become at Anthropic's and Gemini's
 * fakes, for requests their real APIs would refuse if sent as the other
 * dialects take them: the gateway translates them, or answers 400 itself
 * with nothing sent.
 */

const DIALECTS: ProviderDialect[] = ['anthropic', 'gemini']
const gateway = dialectGateway(DIALECTS)

async function send(
  dialect: ProviderDialect,
  body: Omit<OpenAI.ChatCompletionCreateParamsNonStreaming, 'model'>,
) {
  const fake = gateway.fake(dialect)
  const before = fake.requests.length
  let error: InstanceType<typeof OpenAI.APIError> | undefined
  try {
    await gateway.client.chat.completions.create({ model: `m-${dialect}`, ...body })
  } catch (caught) {
    if (!(caught instanceof OpenAI.APIError)) throw caught
    error = caught
  }
  const sent = fake.requests.slice(before)
  return { error, sent, upstream: sent[0]?.body as Record<string, unknown> | undefined }
}

describe('Gemini function declarations', () => {
  it('go as parametersJsonSchema: JSON Schema keywords and a tool without parameters reach Gemini in the field that takes them', async () => {
    const schema = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    }
    const { error, upstream } = await send('gemini', {
      messages: [{ role: 'user', content: 'hi' }],
      tools: [
        { type: 'function', function: { name: 'weather', parameters: schema } },
        { type: 'function', function: { name: 'now' } },
      ],
    })
    expect(error).toBeUndefined()
    expect(upstream?.['tools']).toEqual([
      {
        functionDeclarations: [
          { name: 'weather', parametersJsonSchema: schema },
          { name: 'now', parametersJsonSchema: { type: 'object', properties: {} } },
        ],
      },
    ])
  })
})

describe('a function name Gemini refuses (it must start with a letter or an underscore)', () => {
  it('is refused for Gemini, naming the tool, nothing sent; Anthropic takes it', async () => {
    const tools = [
      { type: 'function' as const, function: { name: 'search' } },
      { type: 'function' as const, function: { name: '1password_read' } },
    ]
    const messages = [{ role: 'user' as const, content: 'hi' }]
    const gemini = await send('gemini', { messages, tools })
    expect(gemini.error?.status).toBe(400)
    expect(gemini.error?.error).toMatchObject({
      code: 'unsupported_field',
      param: 'tools[1].function.name',
    })
    expect(gemini.error?.message).toContain('must start with a letter or an underscore')
    expect(gemini.sent).toHaveLength(0)
    const anthropic = await send('anthropic', { messages, tools })
    expect(anthropic.error).toBeUndefined()
    expect(anthropic.upstream?.['tools']).toMatchObject([
      { name: 'search' },
      { name: '1password_read' },
    ])
  })
})

describe('a tool result whose call is not in the history', () => {
  it('is refused for Gemini (it needs the function name) instead of sending the id as the name', async () => {
    const { error, sent } = await send('gemini', {
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'tool', tool_call_id: 'call_x', content: 'r' },
      ],
    })
    expect(error?.status).toBe(400)
    expect(error?.error).toMatchObject({
      code: 'unsupported_field',
      param: 'messages[1].tool_call_id',
    })
    expect(sent).toHaveLength(0)
  })

  it('still goes when the call is there, paired by name', async () => {
    const { error, upstream } = await send('gemini', {
      messages: [
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'w', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'r' },
      ],
    })
    expect(error).toBeUndefined()
    expect((upstream?.['contents'] as unknown[] | undefined)?.at(-1)).toEqual({
      role: 'user',
      parts: [{ functionResponse: { id: 'c1', name: 'w', response: { result: 'r' } } }],
    })
  })
})

describe('a tool result carrying the name of its function (the OpenAI cookbook’s shape, which OpenAI takes)', () => {
  for (const dialect of DIALECTS) {
    it(`is taken for ${dialect}: the result goes, paired by its tool_call_id, without the name`, async () => {
      const { error, upstream } = await send(dialect, {
        messages: [
          { role: 'user', content: 'hi' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'w', arguments: '{}' } }],
          },
          // Not in openai-node's types: what a hand-built history often holds.
          { role: 'tool', tool_call_id: 'c1', name: 'w', content: 'r' } as never,
        ],
      })
      expect(error?.error).toBeUndefined()
      const sent = JSON.stringify(upstream)
      expect(sent).toContain('"r"')
      expect(sent).not.toContain('"name":"w","content"')
    })
  }
})

describe('a conversation with nothing but system text', () => {
  for (const dialect of DIALECTS) {
    it(`is refused for ${dialect} (empty messages/contents), nothing sent`, async () => {
      for (const messages of [
        [{ role: 'system', content: 'Say hi.' }],
        [
          { role: 'developer', content: 'Say hi.' },
          { role: 'user', content: '' },
        ],
      ] as OpenAI.ChatCompletionMessageParam[][]) {
        const { error, sent } = await send(dialect, { messages })
        expect(error?.status).toBe(400)
        expect(error?.error).toMatchObject({ code: 'unsupported_field', param: 'messages' })
        expect(sent).toHaveLength(0)
      }
    })
  }
})

describe('Gemini 3 function calls sent back without a thought signature', () => {
  const history: OpenAI.ChatCompletionMessageParam[] = [
    { role: 'user', content: 'weather in a and b' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'c1', type: 'function', function: { name: 'w', arguments: '{"city":"a"}' } },
        { id: 'c2', type: 'function', function: { name: 'w', arguments: '{"city":"b"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
    { role: 'tool', tool_call_id: 'c2', content: 'rain' },
  ]

  it('get the documented skip sentinel on the first call of the turn (gemini-3*), and only there', async () => {
    const fake = gateway.fake('gemini')
    const local = await startHarness({
      providers: { g: { dialect: 'gemini', baseURL: fake.baseURL, apiKeys: ['k'] } },
      models: {
        three: fallback(['g', 'gemini-3-pro-preview']),
        two: fallback(['g', 'gemini-2.5-flash']),
      },
    })
    try {
      const before = fake.requests.length
      await local.client.chat.completions.create({ model: 'three', messages: history })
      await local.client.chat.completions.create({ model: 'two', messages: history })
      const [three, two] = fake.requests
        .slice(before)
        .map((r) => (r.body as { contents: { parts: Record<string, unknown>[] }[] }).contents[1])
      expect(three?.parts).toEqual([
        {
          functionCall: { id: 'c1', name: 'w', args: { city: 'a' } },
          thoughtSignature: 'skip_thought_signature_validator',
        },
        { functionCall: { id: 'c2', name: 'w', args: { city: 'b' } } },
      ])
      expect(two?.parts).toEqual([
        { functionCall: { id: 'c1', name: 'w', args: { city: 'a' } } },
        { functionCall: { id: 'c2', name: 'w', args: { city: 'b' } } },
      ])
    } finally {
      await local.close()
    }
  })
})

describe('a refusal that quotes what the client sent', () => {
  it('shows a line or paragraph separator in it escaped, never raw (JSON.stringify leaves them)', async () => {
    const { error, sent } = await send('anthropic', {
      messages: [{ role: 'user', content: 'hi' }],
      stop: ['\u2028\u2029'],
    })
    expect(error?.status).toBe(400)
    expect(error?.error).toMatchObject({ param: 'stop' })
    const message = String((error?.error as { message?: unknown } | undefined)?.message)
    expect(message).toContain('"\\u2028\\u2029"')
    expect(message).not.toMatch(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u)
    expect(sent).toHaveLength(0)
  })
})

describe('answer ids', () => {
  // OpenAI's answers are `chatcmpl-…`, a stream's chunks all carry one id, and
  // the gateway's streams already mint one; a whole answer kept the
  // provider's format (Anthropic's `msg_…`, Gemini's bare `responseId`), so one
  // endpoint answered in two id formats depending on the model behind it.
  it.each(DIALECTS)(
    '%s: whole and streamed answers are chatcmpl- ids, one per stream',
    async (dialect) => {
      const whole = await gateway.client.chat.completions.create({
        model: `m-${dialect}`,
        messages: [{ role: 'user', content: 'hi' }],
      })
      expect(whole.id).toMatch(/^chatcmpl-/)
      const stream = await gateway.client.chat.completions.create({
        model: `m-${dialect}`,
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      })
      const ids = new Set<string>()
      for await (const chunk of stream) ids.add(chunk.id)
      expect([...ids]).toHaveLength(1)
      expect([...ids][0]).toMatch(/^chatcmpl-/)
      expect([...ids][0]).not.toBe(whole.id)
    },
  )
})

describe('log probabilities (logprobs, top_logprobs)', () => {
  const messages = [{ role: 'user' as const, content: 'hi' }]
  /** Each token's entry as OpenAI writes it: `bytes` the token's UTF-8. */
  const expectOpenAIShape = (entry: OpenAI.ChatCompletionTokenLogprob, top: number) => {
    expect(typeof entry.logprob).toBe('number')
    expect(entry.bytes).toEqual([...Buffer.from(entry.token, 'utf8')])
    expect(entry.top_logprobs).toHaveLength(top)
  }

  it("Gemini: translated to responseLogprobs and logprobs, and its logprobsResult comes back as OpenAI's, whole and streamed", async () => {
    const fake = gateway.fake('gemini')
    const whole = await gateway.client.chat.completions.create({
      model: 'm-gemini',
      messages,
      logprobs: true,
      top_logprobs: 2,
    })
    const upstream = fake.requests.at(-1)?.body as Record<string, unknown>
    expect(upstream['generationConfig']).toMatchObject({ responseLogprobs: true, logprobs: 2 })
    expect(upstream).not.toHaveProperty('logprobs')
    expect(upstream).not.toHaveProperty('top_logprobs')
    const content = whole.choices[0]?.logprobs?.content ?? []
    // One entry per answer token: together they spell the answer.
    expect(content.length).toBeGreaterThan(1)
    expect(content.map((t) => t.token).join('')).toBe(whole.choices[0]?.message.content)
    for (const entry of content) expectOpenAIShape(entry, 2)
    expect(whole.choices[0]?.logprobs?.refusal).toBeNull()

    const stream = gateway.client.chat.completions.stream({
      model: 'm-gemini',
      messages,
      logprobs: true,
      top_logprobs: 1,
      stream: true,
    })
    const final = await stream.finalChatCompletion()
    const streamed = final.choices[0]?.logprobs?.content ?? []
    expect(streamed.map((t) => t.token).join('')).toBe(final.choices[0]?.message.content)
    for (const entry of streamed) expectOpenAIShape(entry, 1)

    // Not asked: none asked of Gemini, and `logprobs: null`, as OpenAI answers.
    const unasked = await gateway.client.chat.completions.create({ model: 'm-gemini', messages })
    expect(fake.requests.at(-1)?.body).not.toHaveProperty('generationConfig.responseLogprobs')
    expect(unasked.choices[0]?.logprobs).toBeNull()
  })

  it('Anthropic, which has none, still refuses them, naming the field and the provider, nothing sent', async () => {
    for (const [fields, param] of [
      [{ logprobs: true }, 'logprobs'],
      [{ logprobs: false, top_logprobs: 2 }, 'top_logprobs'],
    ] as const) {
      const { error, sent } = await send('anthropic', { messages, ...fields })
      expect(error?.status).toBe(400)
      expect(error?.error).toMatchObject({ code: 'unsupported_field', param })
      expect(error?.message).toContain('"anthropic"')
      expect(sent).toHaveLength(0)
    }
  })
})

describe('an output cap below the thinking budget of reasoning_effort (Anthropic)', () => {
  const messages = [{ role: 'user' as const, content: 'hi' }]

  it('is refused naming the cap field the client sent: max_completion_tokens, or max_tokens', async () => {
    // The official client's current cap field: named as sent, not as llm's `max_tokens`.
    const current = await send('anthropic', {
      messages,
      reasoning_effort: 'high',
      max_completion_tokens: 2000,
    })
    expect(current.error?.status).toBe(400)
    expect(current.error?.error).toMatchObject({
      code: 'unsupported_field',
      param: 'max_completion_tokens',
    })
    expect(current.error?.message).toMatch(/^400 max_completion_tokens: /)
    expect(current.error?.message).toContain('24576 tokens), got 2000')
    expect(current.error?.message).toContain('send a max_completion_tokens above it')
    expect(current.sent).toHaveLength(0)

    const older = await send('anthropic', { messages, reasoning_effort: 'high', max_tokens: 2000 })
    expect(older.error?.error).toMatchObject({ code: 'unsupported_field', param: 'max_tokens' })
    expect(older.error?.message).toContain('send a max_tokens above it')
    expect(older.sent).toHaveLength(0)
  })
})

describe('a response_format schema to Anthropic (structured outputs)', () => {
  const messages = [{ role: 'user' as const, content: 'Weather in Paris?' }]

  it("goes as output_config.format, and the official client's .parse() gets the answer as content and parsed", async () => {
    // zod's `.min(1)` is a `minimum`, which Anthropic refuses: it goes in the description.
    const Weather = z.object({ city: z.string(), days: z.number().min(1) })
    const format = zodResponseFormat(Weather, 'weather')
    gateway.fake('anthropic').enqueue(reply.text('{"city":"Paris","days":2}'))
    const before = gateway.fake('anthropic').requests.length
    const answer = await gateway.client.chat.completions.parse({
      model: 'm-anthropic',
      messages,
      response_format: format,
    })
    const upstream = gateway.fake('anthropic').requests[before]?.body as Record<string, unknown>
    expect(upstream['output_config']).toEqual({
      format: {
        type: 'json_schema',
        schema: {
          type: 'object',
          properties: {
            city: { type: 'string' },
            days: { type: 'number', description: '{minimum: 1}' },
          },
          required: ['city', 'days'],
          additionalProperties: false,
        },
      },
    })
    expect(upstream).not.toHaveProperty('response_format')
    expect(answer.choices[0]?.message.content).toBe('{"city":"Paris","days":2}')
    expect(answer.choices[0]?.message.parsed).toEqual({ city: 'Paris', days: 2 })
  })

  it('json_object (JSON with no schema, which Anthropic has not) is refused naming the field, nothing sent', async () => {
    const { error, sent } = await send('anthropic', {
      messages,
      response_format: { type: 'json_object' },
    })
    expect(error?.status).toBe(400)
    expect(error?.error).toMatchObject({ code: 'unsupported_field', param: 'response_format.type' })
    expect(error?.message).toContain('json_schema')
    expect(sent).toHaveLength(0)
  })
})
