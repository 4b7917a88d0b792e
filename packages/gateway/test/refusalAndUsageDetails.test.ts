import { type FakeProvider, type ProviderDialect, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * What OpenAI itself answers, through the gateway to the official `openai`
 * client: a refusal as `refusal` (never `content`), and the cached-input and
 * reasoning counts in `usage`. The providers' raw replies are scripted with
 * `reply.error(200, …)` (a verbatim body): the fakes generate neither.
 */

const SCHEMA_FORMAT = {
  type: 'json_schema' as const,
  json_schema: {
    name: 'answer',
    strict: true,
    schema: {
      type: 'object',
      properties: { a: { type: 'number' } },
      required: ['a'],
      additionalProperties: false,
    },
  },
}

const REFUSAL = "I'm sorry, I cannot help with that."

const sse = (events: unknown[]) =>
  `${events.map((e) => `data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`).join('')}`

const chunk = (delta: object, finish: string | null = null) => ({
  id: 'chatcmpl-up',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'gpt-4o',
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
})

const OPENAI_USAGE = {
  prompt_tokens: 1200,
  completion_tokens: 300,
  total_tokens: 1500,
  prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 192, audio_tokens: 0 },
}

describe('refusals and usage details, as OpenAI answers them', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  async function gatewayOver(dialect: ProviderDialect): Promise<FakeProvider> {
    const { fake, entry } = await fakeProvider(dialect, ['key-1'])
    fakes.push(fake)
    harness = await startHarness({
      providers: { up: entry },
      models: { m: fallback(['up', `${dialect}-model`]) },
    })
    return fake
  }

  it('a whole refusal is message.refusal with content null: parse() gives parsed null, not a JSON error', async () => {
    const fake = await gatewayOver('openai')
    fake.enqueue(
      reply.error(200, {
        id: 'chatcmpl-up',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-4o',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: null, refusal: REFUSAL },
            logprobs: null,
            finish_reason: 'stop',
          },
        ],
        usage: OPENAI_USAGE,
      }),
    )
    const completion = await harness!.client.chat.completions.parse({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      response_format: SCHEMA_FORMAT,
    })
    const message = completion.choices[0]!.message
    expect(message.refusal).toBe(REFUSAL)
    expect(message.content).toBeNull()
    expect(message.parsed).toBeNull()
    expect(completion.usage?.prompt_tokens_details?.cached_tokens).toBe(1024)
    expect(completion.usage?.completion_tokens_details?.reasoning_tokens).toBe(192)
    expect(completion.usage).toMatchObject({ prompt_tokens: 1200, completion_tokens: 300 })

    // Pushed back as it came (content null, its text in `refusal`), as
    // OpenAI takes it: the next turn is sent, the refusal in the history.
    fake.enqueue(reply.text('fine'))
    const next = await harness!.client.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: null, refusal: message.refusal },
        { role: 'user', content: 'something else then' },
      ],
    })
    expect(next.choices[0]!.message.content).toBe('fine')
    const sent = fake.requests.at(-1)!.body as {
      messages: Array<{ role: string; content: unknown }>
    }
    expect(sent.messages[1]).toMatchObject({ role: 'assistant', content: REFUSAL })
  })

  it('a streamed refusal is delta.refusal, and the usage chunk carries the details', async () => {
    const fake = await gatewayOver('openai')
    fake.enqueue(
      reply.error(
        200,
        sse([
          chunk({ role: 'assistant', content: null, refusal: '' }),
          chunk({ refusal: "I'm sorry, " }),
          chunk({ refusal: 'I cannot help with that.' }),
          chunk({}, 'stop'),
          { id: 'chatcmpl-up', object: 'chat.completion.chunk', choices: [], usage: OPENAI_USAGE },
          '[DONE]',
        ]),
        { 'content-type': 'text/event-stream' },
      ),
    )
    const stream = await harness!.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      response_format: SCHEMA_FORMAT,
      stream: true,
      stream_options: { include_usage: true },
    })
    let content = ''
    let refusal = ''
    let usage: unknown
    for await (const part of stream) {
      const delta = part.choices[0]?.delta
      content += delta?.content ?? ''
      refusal += delta?.refusal ?? ''
      usage = part.usage ?? usage
    }
    expect(refusal).toBe(REFUSAL)
    expect(content).toBe('')
    expect(usage).toEqual({
      prompt_tokens: 1200,
      completion_tokens: 300,
      total_tokens: 1500,
      prompt_tokens_details: { cached_tokens: 1024 },
      completion_tokens_details: { reasoning_tokens: 192 },
    })
  })

  it("Anthropic's cache reads are cached_tokens and its cache writes cache_write_tokens, whole and streamed", async () => {
    const fake = await gatewayOver('anthropic')
    const usage = {
      input_tokens: 10,
      cache_creation_input_tokens: 20,
      cache_read_input_tokens: 2000,
      output_tokens: 7,
    }
    fake.enqueue(
      reply.error(200, {
        type: 'message',
        id: 'msg_1',
        role: 'assistant',
        model: 'claude',
        content: [{ type: 'text', text: 'hi' }],
        stop_reason: 'end_turn',
        usage,
      }),
    )
    const completion = await harness!.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 50,
    })
    // The writes, billed above the input price, in openai-node's
    // `prompt_tokens_details.cache_write_tokens`: a client pricing from usage needs them.
    expect(completion.usage).toEqual({
      prompt_tokens: 2030,
      completion_tokens: 7,
      total_tokens: 2037,
      prompt_tokens_details: { cached_tokens: 2000, cache_write_tokens: 20 },
    })
    const events = [
      { type: 'message_start', message: { id: 'msg_2', usage: { ...usage, output_tokens: 1 } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 7 } },
      { type: 'message_stop' },
    ]
    fake.enqueue(
      reply.error(
        200,
        events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join(''),
        { 'content-type': 'text/event-stream' },
      ),
    )
    const stream = await harness!.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 50,
      stream: true,
      stream_options: { include_usage: true },
    })
    let streamed: unknown
    for await (const part of stream) streamed = part.usage ?? streamed
    expect(streamed).toMatchObject({
      prompt_tokens: 2030,
      prompt_tokens_details: { cached_tokens: 2000, cache_write_tokens: 20 },
    })
  })

  it("Gemini's cachedContentTokenCount and thoughtsTokenCount are cached_tokens and reasoning_tokens", async () => {
    const fake = await gatewayOver('gemini')
    fake.enqueue(
      reply.error(200, {
        responseId: 'r1',
        modelVersion: 'gemini-model',
        candidates: [{ content: { role: 'model', parts: [{ text: 'hi' }] }, finishReason: 'STOP' }],
        usageMetadata: {
          promptTokenCount: 4000,
          cachedContentTokenCount: 3500,
          candidatesTokenCount: 100,
          thoughtsTokenCount: 250,
          totalTokenCount: 4350,
        },
      }),
    )
    const completion = await harness!.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 500,
    })
    expect(completion.usage).toEqual({
      prompt_tokens: 4000,
      completion_tokens: 350,
      total_tokens: 4350,
      prompt_tokens_details: { cached_tokens: 3500 },
      completion_tokens_details: { reasoning_tokens: 250 },
    })
  })

  it('a plain answer keeps refusal null and reports no detail the provider did not give', async () => {
    const fake = await gatewayOver('openai')
    fake.enqueue(
      reply.error(200, {
        id: 'chatcmpl-up',
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: '{"a":1}' } }],
        usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
      }),
    )
    const completion = await harness!.client.chat.completions.parse({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      response_format: SCHEMA_FORMAT,
    })
    expect(completion.choices[0]!.message.parsed).toEqual({ a: 1 })
    expect(completion.choices[0]!.message.refusal).toBeNull()
    expect(completion.usage).toEqual({ prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 })
  })
})
