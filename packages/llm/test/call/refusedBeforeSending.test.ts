import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { CallModelOptions } from '../../src/call/CallModelOptions.js'
import { callModel } from '../../src/call/callModel.js'
import type { ModelStream } from '../../src/call/ModelStream.js'
import { isInvalidChatRequest } from '../../src/errors/InvalidChatRequestError.js'
import type { ChatMessage, ChatRequest } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()

/**
 * Values a JavaScript caller can pass that a call cannot honour are refused
 * before anything is sent, with an error naming them — not a raw
 * "Cannot read properties of null" from deep inside, nor a network failure
 * of every model in the list.
 */
describe('hostile options are refused by name, before sending', () => {
  const setup = async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const call = (patch: Record<string, unknown>) =>
      callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 8 },
        limits: { admission: false },
        ...patch,
      } as CallModelOptions)
    return { fake, call }
  }

  // undici refuses a header with a line break: each attempt failed as
  // `network`, and the call ended as ModelUnavailableError.
  it('an idempotencyKey that cannot be a header value is a TypeError naming it', async () => {
    const { fake, call } = await setup()
    for (const idempotencyKey of ['a\r\nb', '', 42]) {
      await expect(call({ idempotencyKey })).rejects.toThrow(/idempotencyKey/)
    }
    expect(fake.requests).toHaveLength(0)
  })

  it('retry, recovery or limits of null is a TypeError naming it', async () => {
    const { fake, call } = await setup()
    for (const name of ['retry', 'recovery', 'limits']) {
      await expect(call({ [name]: null })).rejects.toThrow(
        new RegExp(`callModel: ${name} must be an object`),
      )
    }
    expect(fake.requests).toHaveLength(0)
  })

  it('a message that is null or has no role/content is an InvalidChatRequestError naming its index', async () => {
    const { fake, call } = await setup()
    for (const bad of [null, 'hi', { role: 'user', content: 1 }, { content: 'hi' }]) {
      const refused = await call({ request: { messages: [user('a'), bad], maxTokens: 8 } }).then(
        () => undefined,
        (error: unknown) => error,
      )
      expect(isInvalidChatRequest(refused), String(bad)).toBe(true)
      expect((refused as Error).message).toMatch(/^messages\[1\]/)
    }
    expect(fake.requests).toHaveLength(0)
  })

  // Anthropic's and Gemini's builders read every role but assistant (and
  // system, tool) as the user's: OpenAI's `developer` instructions, or a
  // typo, went out as a user turn — on a fallback, without a word.
  it('a message whose role is none of system, user, assistant, tool (OpenAI’s developer, a typo) is refused naming it, before sending', async () => {
    const fake = await fakes.start({ dialect: 'anthropic' })
    const model = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant-test', model: 'claude-x' }),
    )
    for (const role of ['developer', 'User', 'bot']) {
      const refused = await callModel({
        models: [model],
        request: { messages: [user('a'), { role, content: 'be brief' }], maxTokens: 8 },
        limits: { admission: false },
      } as CallModelOptions).then(
        () => undefined,
        (error: unknown) => error,
      )
      expect(isInvalidChatRequest(refused), role).toBe(true)
      expect((refused as Error).message).toMatch(/^messages\[1\]: .*role/)
      expect((refused as Error).message).toContain(`"${role}"`)
    }
    expect(fake.requests).toHaveLength(0)
  })

  it('a content block of another type (an image part), a null block or a text that is no string is refused naming the block, before sending', async () => {
    const { fake, call } = await setup()
    const cases: Array<[unknown, RegExp]> = [
      // Before: dropped without a word — OpenAI's wire sent `content: ""`, and the model answered that.
      [
        { type: 'image_url', image_url: { url: 'https://x/cat.png' } },
        /^messages\[1\]\.content\[1\]: .*"image_url"/,
      ],
      // Before: "Cannot read properties of null (reading 'type')", a TypeError from the builder.
      [null, /^messages\[1\]\.content\[1\]: .*got null/],
      [{ type: 'text', text: 5 }, /^messages\[1\]\.content\[1\]\.text: /],
    ]
    for (const [block, message] of cases) {
      const messages = [
        user('a'),
        { role: 'user', content: [{ type: 'text', text: 'look:' }, block] },
      ]
      const refused = await call({ request: { messages, maxTokens: 8 } }).then(
        () => undefined,
        (error: unknown) => error,
      )
      expect(isInvalidChatRequest(refused), JSON.stringify(block)).toBe(true)
      expect((refused as Error).message).toMatch(message)
    }
    expect(fake.requests).toHaveLength(0)
  })

  it('request fields a builder cannot read are refused naming the field, before sending', async () => {
    const { fake, call } = await setup()
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      // Before: `"temperature": null` went out (NaN given the provider's default).
      [{ temperature: Number.NaN }, /^temperature: /],
      [{ topP: '0.9' }, /^topP: /],
      // Before: OpenAI took it; Anthropic threw "stop.forEach is not a function"; Gemini sent it (a 400).
      [{ stop: 'END' }, /^stop: .*\["END"\]/],
      [{ stop: [1] }, /^stop\[0\]: /],
      // Before: dropped, and the model answered without its tools.
      [{ tools: { name: 'search', parameters: {} } }, /^tools: /],
      [{ tools: [null] }, /^tools\[0\]: /],
      [{ extra: null }, /^extra: /],
      // Before: a whole-answer request went out (billed) and callModel returned a promise.
      [{ stream: 'true' }, /^stream: true or false, got 'true'/],
      [{ stream: 1 }, /^stream: /],
    ]
    for (const [patch, message] of cases) {
      const refused = await call({
        request: { messages: [user('hi')], maxTokens: 8, ...patch },
      }).then(
        () => undefined,
        (error: unknown) => error,
      )
      expect(isInvalidChatRequest(refused), JSON.stringify(patch)).toBe(true)
      expect((refused as Error).message).toMatch(message)
    }
    expect(fake.requests).toHaveLength(0)
  })

  // JSON has no NaN nor Infinity: JSON.stringify wrote them as `null`, so a
  // `seed: NaN` went out as `"seed": null` (no seed: a different answer each
  // time, the caller never told) and a penalty of NaN as the provider's
  // default — NaN given a meaning, as `temperature: NaN` was before.
  it('a number in `extra` that JSON cannot hold (NaN, ±Infinity), however deep, is refused naming its path, before sending', async () => {
    const { fake, call } = await setup()
    const schema = { type: 'object', properties: { n: { type: 'number', maximum: Number.NaN } } }
    class Celsius {
      constructor(readonly degrees: number) {}
      toJSON() {
        return this.degrees
      }
    }
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ seed: Number.NaN }, 'seed'],
      [{ frequency_penalty: Number.POSITIVE_INFINITY }, 'frequency_penalty'],
      // A key that is no name is in brackets, as the gateway names it:
      // `logit_bias.a.b` could be `{ a: { b } }` too.
      [{ logit_bias: { '50256': Number.NEGATIVE_INFINITY } }, 'logit_bias["50256"]'],
      [{ metadata: { 'a.b': Number.NaN } }, 'metadata["a.b"]'],
      [
        { response_format: { type: 'json_schema', json_schema: { name: 'r', schema } } },
        'response_format.json_schema.schema.properties.n.maximum',
      ],
      [{ stop_token_ids: [1, Number.NaN] }, 'stop_token_ids[1]'],
      // Written as JSON writes them: what a toJSON returns, a boxed number's
      // value (each went out as null, where the BigInt twins were refused).
      [{ seed: new Celsius(Number.NaN) }, 'seed'],
      [{ metadata: { toJSON: () => ({ x: Number.POSITIVE_INFINITY }) } }, 'metadata.x'],
      [{ seed: new Number(Number.NaN) }, 'seed'],
    ]
    for (const [extra, field] of cases) {
      for (const stream of [false, true]) {
        const called: unknown = call({
          request: { messages: [user('hi')], maxTokens: 8, stream, extra },
        })
        const settled = stream ? (called as ModelStream).result : (called as Promise<unknown>)
        const refused = await settled.then(
          () => undefined,
          (error: unknown) => error,
        )
        expect(isInvalidChatRequest(refused), `${field} (stream: ${stream})`).toBe(true)
        expect((refused as { field: string }).field).toBe(field)
        expect((refused as Error).message).toMatch(/a finite number .*JSON has none/)
      }
    }
    expect(fake.requests).toHaveLength(0)
    // Finite numbers, and a null the caller wrote, go as they are.
    await call({
      request: {
        messages: [user('hi')],
        maxTokens: 8,
        extra: { seed: 42, logit_bias: { '50256': -100 }, presence_penalty: null },
      },
    })
    expect(fake.requests[0]?.body).toMatchObject({
      seed: 42,
      logit_bias: { '50256': -100 },
      presence_penalty: null,
    })
  })

  // The same NaN went out as null where `extra`'s was refused: a tool's
  // schema (`maximum: Infinity` → `"maximum": null`, which the gateway
  // passed with 200 in `tools` and refused in `response_format`), and a
  // history's tool call (`{ t: NaN }` → Anthropic's `"input": {"t": null}`).
  it('a NaN or ±Infinity in a tool’s parameters or a tool call’s arguments is refused naming its path, before sending', async () => {
    const { fake, call } = await setup()
    const calling = (calls: unknown[]): ChatMessage[] => [
      user('set it'),
      { role: 'assistant', content: calls } as ChatMessage,
      { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'c2', content: 'ok' }] },
    ]
    const set = (id: string, args: unknown) => ({
      type: 'tool_call',
      id,
      name: 'set',
      arguments: args,
    })
    const schema = {
      type: 'object',
      properties: { t: { type: 'number', maximum: Number.POSITIVE_INFINITY } },
    }
    const cases: Array<[Partial<ChatRequest>, string]> = [
      [
        {
          tools: [
            { name: 'get', parameters: {} },
            { name: 'set', parameters: schema },
          ],
        },
        'tools[1].function.parameters.properties.t.maximum',
      ],
      [
        {
          messages: calling([
            { type: 'text', text: 'a' },
            set('c1', { t: 1 }),
            set('c2', { t: Number.NaN }),
          ]),
        },
        'messages[1].tool_calls[1].function.arguments.t',
      ],
      [
        { messages: calling([set('c2', { at: [0, Number.NEGATIVE_INFINITY] })]) },
        'messages[1].tool_calls[0].function.arguments.at[1]',
      ],
      // Written whole, their own toJSON called: each went out as null.
      [
        { tools: [{ name: 'set', parameters: { type: 'object', toJSON: () => schema } }] },
        'tools[0].function.parameters.properties.t.maximum',
      ],
      [
        { messages: calling([set('c2', { t: 1, toJSON: () => ({ t: Number.NaN }) })]) },
        'messages[1].tool_calls[0].function.arguments.t',
      ],
    ]
    for (const [patch, field] of cases) {
      const refused = await call({
        request: { messages: [user('hi')], maxTokens: 8, ...patch },
      }).then(
        () => undefined,
        (error: unknown) => error,
      )
      expect(isInvalidChatRequest(refused), field).toBe(true)
      expect((refused as { field: string }).field).toBe(field)
      expect((refused as Error).message).toMatch(/a finite number .*JSON has none/)
    }
    expect(fake.requests).toHaveLength(0)
    // A call that kept its text goes as that text on OpenAI's wire: its
    // parsed value is not written.
    await call({
      request: {
        messages: calling([
          { ...set('c2', { t: Number.POSITIVE_INFINITY }), rawArguments: '{"t":1e999}' },
        ]),
        maxTokens: 8,
      },
    })
    const sent = fake.requests[0]?.body as { messages: Array<{ tool_calls?: unknown }> }
    expect(sent.messages[1]?.tool_calls).toMatchObject([{ function: { arguments: '{"t":1e999}' } }])
  })

  // Anthropic adds `type: 'object'` to a schema without one: spread, a
  // class's own `toJSON` (on its prototype) was dropped, so the fields went
  // out, not what the check had read — `maximum: Infinity` as null, unrefused.
  it('anthropic: a schema without type whose toJSON is on its class is sent as that toJSON returns, and checked so', async () => {
    const fake = await fakes.start({ dialect: 'anthropic', reply: reply.text('ok') })
    const model = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant-test', model: 'claude-x' }),
    )
    const written = { properties: { n: { type: 'number', maximum: 10 } } }
    class Schema {
      properties = { n: { type: 'number', maximum: Number.POSITIVE_INFINITY } }
      toJSON() {
        return written
      }
    }
    class NaNSchema {
      properties = { n: { type: 'number', maximum: 10 } }
      toJSON() {
        return { properties: { n: { type: 'number', maximum: Number.NaN } } }
      }
    }
    const call = (parameters: object) =>
      callModel({
        models: [model],
        request: { messages: [user('hi')], maxTokens: 8, tools: [{ name: 'set', parameters }] },
        limits: { admission: false },
      } as CallModelOptions)
    await call(new Schema())
    const sent = fake.requests[0]?.body as { tools: Array<{ input_schema: unknown }> }
    // Was { type: 'object', properties: { n: { type: 'number', maximum: null } } }.
    expect(sent.tools[0]?.input_schema).toEqual({ type: 'object', ...written })
    const refused = await call(new NaNSchema()).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(refused).toMatchObject({
      code: 'INVALID_CHAT_REQUEST',
      field: 'tools[0].function.parameters.properties.n.maximum',
    })
    expect(fake.requests).toHaveLength(1)
  })

  // Each node's toJSON returns a new { value, prev, next }: the check walked
  // every path through the list (53 s of a blocked event loop for three
  // nodes), then failed with a raw RangeError. The build refuses it by name.
  it('a linked list whose nodes’ toJSON point back (extra, parameters, arguments) is refused by name at once', async () => {
    const { fake, call } = await setup()
    type Node = {
      value: number
      prev?: Node | undefined
      next?: Node | undefined
      toJSON(): unknown
    }
    const nodes: Node[] = [1, 2, 3].map((value) => ({
      value,
      toJSON(this: Node) {
        return { value: this.value, prev: this.prev ?? null, next: this.next ?? null }
      },
    }))
    nodes.forEach((node, i) => {
      node.prev = nodes[i - 1]
      node.next = nodes[i + 1]
    })
    const head = nodes[0]
    const cases: Array<[Partial<ChatRequest>, string]> = [
      [{ extra: { metadata: head } }, 'metadata'],
      // Named as a NaN in it is: by the wire path a gateway client wrote.
      [
        { tools: [{ name: 'set', parameters: { type: 'object', head } }] },
        'tools[0].function.parameters',
      ],
      [
        {
          messages: [
            user('set it'),
            {
              role: 'assistant',
              content: [{ type: 'tool_call', id: 'c', name: 'set', arguments: { head } }],
            },
            { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'c', content: 'ok' }] },
          ],
        },
        'messages[1].tool_calls[0].function.arguments',
      ],
    ]
    for (const [patch, field] of cases) {
      const refused = await call({
        request: { messages: [user('hi')], maxTokens: 8, ...patch },
      }).then(
        () => undefined,
        (error: unknown) => error,
      )
      expect(isInvalidChatRequest(refused), field).toBe(true)
      expect((refused as { field: string }).field).toBe(field)
      expect((refused as Error).message).toMatch(/refers to itself/)
    }
    expect(fake.requests).toHaveLength(0)
  })

  // No chat API takes an empty conversation (OpenAI-compatible servers answer
  // 400 `messages` too short; Anthropic's and Gemini's builders already
  // refused it): OpenAI's wire sent `messages: []`, and the provider's 400
  // came back as RequestRejectedError after a request went out.
  it('an empty messages list (or one of holes only) is an InvalidChatRequestError naming messages, before sending', async () => {
    const { fake, call } = await setup()
    for (const messages of [[], new Array(2)]) {
      const refused = await call({ request: { messages, maxTokens: 8 } }).then(
        () => undefined,
        (error: unknown) => error,
      )
      expect(isInvalidChatRequest(refused), JSON.stringify(messages)).toBe(true)
      expect((refused as { field: string }).field).toBe('messages')
      expect((refused as Error).message).toMatch(/^messages: .*at least one message/)
    }
    expect(fake.requests).toHaveLength(0)
  })

  // The refusal read `options.request.stream` once more to choose a promise
  // or a stream: a getter that threw there threw out of callModel itself.
  it('an options getter that throws rejects the promise; callModel itself does not throw', async () => {
    const options = {
      models: [],
      get request(): never {
        throw new Error('getter')
      },
    } as unknown as CallModelOptions
    let returned: Promise<unknown> | undefined
    expect(() => {
      returned = callModel(options)
    }).not.toThrow()
    await expect(returned).rejects.toThrow()
  })
})

/**
 * Anthropic's and Gemini's builders drop a message with nothing to send
 * (Anthropic refuses empty text). Dropped at the end, a user's empty turn
 * left the assistant's turn last — which both providers continue as a
 * prefill instead of answering (Anthropic's API would have answered 400).
 */
describe('an empty last user turn is refused, not dropped into a prefill', () => {
  const hiYo = [user('hi'), { role: 'assistant' as const, content: 'yo' }]
  for (const [dialect, model] of [
    ['anthropic', 'claude-sonnet-4-5'],
    ['gemini', 'gemini-2.5-flash'],
  ] as const) {
    it(`${dialect}: refused naming the message, before sending; an empty turn that changes nothing still goes`, async () => {
      const fake = await fakes.start({ dialect, reply: reply.text('answer') })
      const adapter = fakes.adapterFor(dialect, fake.baseURL, model)
      const send = (messages: ChatMessage[]) =>
        callModel({
          models: [adapter],
          request: { messages, maxTokens: 8 },
          limits: { admission: false },
        }).then(
          (response) => response.text,
          (error: unknown) => error,
        )
      for (const [messages, field] of [
        [[...hiYo, user('')], 'messages[2].content'],
        [[...hiYo, { role: 'user', content: [{ type: 'text', text: '' }] }], 'messages[2].content'],
        [[...hiYo, { role: 'user', content: [] }], 'messages[2].content'],
        [[...hiYo, user(''), { role: 'system', content: 'be brief' }], 'messages[2].content'],
        // An empty assistant message after it is dropped too: "yo" still came last.
        [[...hiYo, user(''), { role: 'assistant', content: '' }], 'messages[2].content'],
      ] as [ChatMessage[], string][]) {
        const refused = await send(messages)
        expect(isInvalidChatRequest(refused), JSON.stringify(messages)).toBe(true)
        expect((refused as { field: string }).field).toBe(field)
      }
      expect(fake.requests).toHaveLength(0)
      // The meaning is kept: the user still speaks last, or the assistant's
      // empty turn asked for nothing to continue.
      expect(await send([user('hi'), user('')])).toBe('answer')
      expect(await send([user('hi'), { role: 'assistant', content: '' }])).toBe('answer')
      expect(fake.requests).toHaveLength(2)
    })
  }
})
