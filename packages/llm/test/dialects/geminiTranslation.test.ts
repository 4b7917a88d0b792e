import { afterEach, describe, expect, it } from 'vitest'
import {
  byteChunks,
  type ReplayServer,
  startReplayServer,
} from '../../../../test/support/replayServer.js'
import { dialects } from '../../src/dialects/dialects.js'
import { isProviderReplyError } from '../../src/errors/ProviderReplyError.js'
import type { ToolDefinition } from '../../src/types.js'
import { streamThrough, textOf } from './support/streamThrough.js'

const gemini = dialects.gemini

let server: ReplayServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

describe('Gemini generateContent translation', () => {
  it('builds contents/parts, systemInstruction, generationConfig, and finds a tool result’s function name by call id', () => {
    const built = gemini.buildRequest(
      {
        maxTokens: 256,
        temperature: 0.5,
        topP: 0.9,
        stop: ['END'],
        tools: [
          {
            name: 'get_weather',
            description: 'Weather',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
          },
        ],
        messages: [
          { role: 'system', content: 'Answer in Chinese.' },
          { role: 'user', content: '天气？' },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: '', signature: 'CiQBcsjafF' },
              { type: 'tool_call', id: 'call_0', name: 'get_weather', arguments: { city: '北京' } },
            ],
          },
          { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'call_0', content: '晴' }] },
        ],
      },
      'gemini-2.5-flash',
    )
    expect(built.path).toBe('/models/gemini-2.5-flash:generateContent')
    expect(built.body).toEqual({
      systemInstruction: { parts: [{ text: 'Answer in Chinese.' }] },
      generationConfig: {
        maxOutputTokens: 256,
        temperature: 0.5,
        topP: 0.9,
        stopSequences: ['END'],
      },
      tools: [
        {
          functionDeclarations: [
            {
              name: 'get_weather',
              description: 'Weather',
              parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } } },
            },
          ],
        },
      ],
      contents: [
        { role: 'user', parts: [{ text: '天气？' }] },
        {
          role: 'model',
          parts: [
            {
              functionCall: { id: 'call_0', name: 'get_weather', args: { city: '北京' } },
              thoughtSignature: 'CiQBcsjafF',
            },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { id: 'call_0', name: 'get_weather', response: { result: '晴' } } },
          ],
        },
      ],
    })
    expect(
      gemini.buildRequest(
        { maxTokens: 1, stream: true, messages: [{ role: 'user', content: 'x' }] },
        'gemini-2.5-flash',
      ).path,
    ).toBe('/models/gemini-2.5-flash:streamGenerateContent?alt=sse')
  })

  it('gives Gemini 3 the documented skip sentinel for a function call without its signature, never over a real one', () => {
    const call = (id: string) => ({ type: 'tool_call', id, name: 'w', arguments: {} }) as const
    const built = gemini.buildRequest(
      {
        maxTokens: 1,
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: [call('a'), call('b')] },
          { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'a', content: '1' }] },
          { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'b', content: '2' }] },
          {
            role: 'assistant',
            content: [{ type: 'thinking', thinking: '', signature: 'CiQB' }, call('c')],
          },
          { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'c', content: '3' }] },
        ],
      },
      'gemini-3-flash-preview',
    )
    const contents = (built.body as { contents: { parts: Record<string, unknown>[] }[] }).contents
    expect(contents[1]?.parts.map((p) => p['thoughtSignature'])).toEqual([
      'skip_thought_signature_validator',
      undefined,
    ])
    expect(contents[3]?.parts[0]?.['thoughtSignature']).toBe('CiQB')
  })

  it('parses text, thought summaries, a signed function call (finish → tool_calls) and usage with thoughts as output', () => {
    const parsed = gemini.parseResponse(
      JSON.stringify({
        candidates: [
          {
            content: {
              role: 'model',
              parts: [
                { text: 'Considering the weather tool', thought: true },
                { text: '好的。' },
                {
                  functionCall: { name: 'get_weather', args: { city: '上海' } },
                  thoughtSignature: 'CiQBcsjafF',
                },
              ],
            },
            finishReason: 'STOP',
            index: 0,
          },
        ],
        usageMetadata: {
          promptTokenCount: 40,
          candidatesTokenCount: 12,
          thoughtsTokenCount: 30,
          totalTokenCount: 82,
        },
        modelVersion: 'gemini-2.5-flash',
        responseId: 'resp-1',
      }),
    )
    expect(parsed).toEqual({
      id: 'resp-1',
      model: 'gemini-2.5-flash',
      provider: 'gemini',
      content: [
        { type: 'thinking', thinking: 'Considering the weather tool', signature: undefined },
        { type: 'text', text: '好的。' },
        { type: 'thinking', thinking: '', signature: 'CiQBcsjafF' },
        {
          type: 'tool_call',
          id: expect.stringMatching(/^call_[0-9a-f]{12}_0$/),
          name: 'get_weather',
          arguments: { city: '上海' },
        },
      ],
      text: '好的。',
      finishReason: 'tool_calls',
      usage: { inputTokens: 40, outputTokens: 42, reasoningTokens: 30 },
    })
  })

  it.each([
    ['MAX_TOKENS', 'length'],
    ['SAFETY', 'content_filter'],
    ['RECITATION', 'content_filter'],
    ['MALFORMED_FUNCTION_CALL', 'error'],
    // js-genai FinishReason / Vertex AI v1 Candidate's newer reasons.
    ['UNEXPECTED_TOOL_CALL', 'error'],
    ['TOO_MANY_TOOL_CALLS', 'error'],
    ['IMAGE_PROHIBITED_CONTENT', 'content_filter'],
    ['MODEL_ARMOR', 'content_filter'],
    // Output stopped for its unsupported language: a block, not the model's stop.
    ['LANGUAGE', 'content_filter'],
    // "All other reasons that stopped the token generation": cut short by
    // Gemini for a reason it does not give — not a complete answer.
    ['OTHER', 'error'],
    ['IMAGE_OTHER', 'error'],
    ['NO_IMAGE', 'error'],
    ['MALFORMED_RESPONSE', 'error'],
    ['MISSING_THOUGHT_SIGNATURE', 'error'],
    // Gemini said nothing: no reason to tell.
    ['FINISH_REASON_UNSPECIFIED', 'unknown'],
  ])('finishReason %s maps to %s', (reason, finish) => {
    const parsed = gemini.parseResponse({
      candidates: [{ content: { parts: [{ text: 'x' }] }, finishReason: reason }],
    })
    expect(parsed.finishReason).toBe(finish)
  })

  it('a streamed answer in its JSON-array form (streamGenerateContent without alt=sse, through a proxy that drops it) reads as one answer', () => {
    const chunk = (parts: object[], extra: object = {}) => ({
      candidates: [{ content: { role: 'model', parts }, index: 0, ...extra }],
      usageMetadata: { promptTokenCount: 7, candidatesTokenCount: 2 },
      modelVersion: 'gemini-2.5-flash',
      responseId: 'r-1',
    })
    const answer = gemini.parseResponse(
      JSON.stringify([
        chunk([{ text: 'Hel' }]),
        chunk([{ text: 'lo' }]),
        chunk([{ functionCall: { name: 'f', args: { a: 1 } }, thoughtSignature: 'sig' }], {
          finishReason: 'STOP',
        }),
      ]),
    )
    expect(answer).toMatchObject({
      id: 'r-1',
      model: 'gemini-2.5-flash',
      text: 'Hello',
      finishReason: 'tool_calls',
      usage: { inputTokens: 7, outputTokens: 2 },
    })
    expect(answer.content.map((b) => b.type)).toEqual(['text', 'thinking', 'tool_call'])
    // A blocked prompt in that form is still the refusal it is.
    expect(() => gemini.parseResponse([{ promptFeedback: { blockReason: 'SAFETY' } }])).toThrow(
      'prompt blocked: SAFETY',
    )
  })

  it('a blocked prompt throws a content-policy ProviderReplyError instead of returning nothing', () => {
    let caught: unknown
    try {
      gemini.parseResponse({ promptFeedback: { blockReason: 'PROHIBITED_CONTENT' } })
    } catch (error) {
      caught = error
    }
    expect(isProviderReplyError(caught) && caught.error).toMatchObject({
      kind: 'content_policy',
      retryable: false,
    })
  })

  it('streams alt=sse chunks with \\r\\n\\r\\n separators, split inside characters, finishing on the chunk with finishReason', async () => {
    const chunk = (obj: object) => `data: ${JSON.stringify(obj)}\r\n\r\n`
    const stream =
      chunk({
        candidates: [{ content: { role: 'model', parts: [{ text: '春眠不觉晓，' }] }, index: 0 }],
        usageMetadata: { promptTokenCount: 8 },
        modelVersion: 'gemini-2.5-flash',
        responseId: 'r-9',
      }) +
      chunk({
        candidates: [{ content: { role: 'model', parts: [{ text: '处处闻啼鸟🐦' }] }, index: 0 }],
        modelVersion: 'gemini-2.5-flash',
        responseId: 'r-9',
      }) +
      chunk({
        candidates: [
          { content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'STOP', index: 0 },
        ],
        usageMetadata: { promptTokenCount: 8, candidatesTokenCount: 14, totalTokenCount: 22 },
        modelVersion: 'gemini-2.5-flash',
        responseId: 'r-9',
      })
    server = await startReplayServer(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: byteChunks(stream, 1),
    }))
    const parser = gemini.createStreamParser()
    const { events } = await streamThrough(await fetch(server.url), parser)
    expect(textOf(events)).toBe('春眠不觉晓，处处闻啼鸟🐦')
    expect(events.at(-1)).toEqual({
      type: 'finish',
      finishReason: 'stop',
      usage: { inputTokens: 8, outputTokens: 14 },
      id: 'r-9',
      model: 'gemini-2.5-flash',
    })
    expect(events.filter((e) => e.type === 'finish')).toHaveLength(1)
    expect(parser.done).toBe(true)
  })

  it('a streamed function call arrives whole as one tool_call delta and finishes as tool_calls', async () => {
    const stream = `data: ${JSON.stringify({
      candidates: [
        {
          content: {
            role: 'model',
            parts: [{ functionCall: { name: 'get_weather', args: { city: '北京' } } }],
          },
          finishReason: 'STOP',
        },
      ],
      usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 3 },
    })}\r\n\r\n`
    server = await startReplayServer(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: [stream],
    }))
    const { events } = await streamThrough(await fetch(server.url), gemini.createStreamParser())
    expect(events).toEqual([
      {
        type: 'tool_call',
        id: expect.stringMatching(/^call_[0-9a-f]{12}_0$/),
        name: 'get_weather',
        argumentsDelta: '{"city":"北京"}',
        index: 0,
      },
      {
        type: 'finish',
        finishReason: 'tool_calls',
        usage: { inputTokens: 5, outputTokens: 3 },
        id: undefined,
      },
    ])
  })
})

describe('extra Chat Completions fields (request.extra)', () => {
  const build = (extra: Record<string, unknown>, tools: ToolDefinition[] = []) =>
    gemini.buildRequest(
      { messages: [{ role: 'user', content: 'hi' }], maxTokens: 10, tools, extra },
      'g',
    ).body as Record<string, unknown>
  const withTools = (extra: Record<string, unknown>) =>
    build(extra, [{ name: 'f', parameters: { type: 'object' } }])

  it("accepts store: false, OpenAI's default that clients send explicitly, sending nothing; refuses store: true", () => {
    expect(build({ store: false })).not.toHaveProperty('store')
    expect(() => build({ store: true })).toThrow(/store/)
  })

  it("accepts OpenAI's defaults clients fill in (service_tier auto, verbosity medium), sending none; refuses any other value naming it", () => {
    expect(build({ service_tier: 'auto', verbosity: 'medium' })).toEqual(build({}))
    for (const [field, value] of [
      ['service_tier', 'priority'],
      ['service_tier', 'flex'],
      ['verbosity', 'high'],
      ['prompt_cache_retention', 'in_memory'],
      ['prompt_cache_retention', '24h'],
    ] as const) {
      expect(() => build({ [field]: value })).toThrow(`${field}: Gemini has no equivalent`)
    }
  })

  it('up to 5 stop sequences are sent; more throws naming stop', () => {
    const withStop = (n: number) =>
      gemini.buildRequest(
        {
          messages: [{ role: 'user', content: 'hi' }],
          maxTokens: 10,
          stop: Array.from({ length: n }, (_, i) => `s${i}`),
        },
        'g',
      ).body as { generationConfig: Record<string, unknown> }
    expect(withStop(5).generationConfig['stopSequences']).toHaveLength(5)
    expect(() => withStop(6)).toThrow('stop: Gemini takes at most 5 stop sequences, got 6')
  })

  it('translates response_format, tool_choice, seed and penalties; accepts the defaults', () => {
    const schema = { type: 'object', additionalProperties: false }
    const body = withTools({
      response_format: { type: 'json_schema', json_schema: { name: 'a', schema } },
      tool_choice: { type: 'function', function: { name: 'f' } },
      seed: 3,
      frequency_penalty: 0.5,
      presence_penalty: -0.5,
      n: 1,
      parallel_tool_calls: true,
    })
    expect(body['generationConfig']).toEqual({
      maxOutputTokens: 10,
      responseMimeType: 'application/json',
      responseJsonSchema: schema,
      seed: 3,
      frequencyPenalty: 0.5,
      presencePenalty: -0.5,
    })
    expect(body['toolConfig']).toEqual({
      functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['f'] },
    })
    expect(build({ response_format: { type: 'json_object' } })['generationConfig']).toMatchObject({
      responseMimeType: 'application/json',
    })
    expect(withTools({ tool_choice: 'none' })['toolConfig']).toEqual({
      functionCallingConfig: { mode: 'NONE' },
    })
  })

  it('without tools, tool_choice auto or none and parallel_tool_calls are not sent (Gemini answers 400: "Function calling config is set without function_declarations"); a demanded call throws naming tool_choice', () => {
    for (const extra of [
      { parallel_tool_calls: false },
      { tool_choice: 'auto' },
      { tool_choice: 'none', parallel_tool_calls: true },
    ]) {
      expect(build(extra), JSON.stringify(extra)).not.toHaveProperty('toolConfig')
    }
    expect(() => build({ tool_choice: 'required' })).toThrow(
      'tool_choice: names tools or asks for a tool call, and the request has no tools',
    )
    const named = { type: 'function', function: { name: 'f' } }
    expect(() => build({ tool_choice: named })).toThrow('tool_choice: ')
    expect(() => withTools({ tool_choice: { ...named, function: { name: 'g' } } })).toThrow(
      'tool_choice.function.name: no tool named "g" in tools',
    )
  })

  it('parallel_tool_calls: false beside tool_choice none (no call can be made) is not refused', () => {
    expect(withTools({ tool_choice: 'none', parallel_tool_calls: false })['toolConfig']).toEqual({
      functionCallingConfig: { mode: 'NONE' },
    })
    expect(() => withTools({ tool_choice: 'auto', parallel_tool_calls: false })).toThrow(
      'parallel_tool_calls: Gemini has no equivalent',
    )
  })

  it('an empty tools list in extra is no tools: left out with the settings, not refused as a field without an equivalent', () => {
    const body = build({ tools: [], tool_choice: 'auto' })
    expect(body).not.toHaveProperty('tools')
    expect(body).not.toHaveProperty('toolConfig')
  })

  it('sends no penalty of 0 (OpenAI’s default, which Gemini 2.5 answers with 400); a seed of 0 goes', () => {
    const config = build({ frequency_penalty: 0, presence_penalty: 0, seed: 0 })['generationConfig']
    expect(config).toEqual({ maxOutputTokens: 10, seed: 0 })
  })

  it('throws InvalidChatRequestError naming any field it has no equivalent for', () => {
    for (const [field, value] of [
      ['parallel_tool_calls', false],
      ['logit_bias', { '1': 1 }],
      ['user', 'u'],
      ['enable_thinking', true],
    ] as const) {
      expect(() => withTools({ [field]: value }), field).toThrow(
        `${field}: Gemini has no equivalent`,
      )
    }
  })

  it('json_schema: the description becomes the schema’s own; none without a schema or beside another; a null schema is not set', () => {
    const schema = { type: 'object' }
    const format = (json_schema: Record<string, unknown>) =>
      build({
        response_format: { type: 'json_schema', json_schema: { name: 'a', ...json_schema } },
      })['generationConfig']
    expect(format({ schema, description: 'why' })).toMatchObject({
      responseJsonSchema: { description: 'why', type: 'object' },
    })
    expect(schema).toEqual({ type: 'object' })
    const own = { type: 'object', description: 'why' }
    expect(format({ schema: own, description: 'why' })).toMatchObject({ responseJsonSchema: own })
    const field = 'response_format.json_schema.description: '
    expect(() => format({ description: 'why' })).toThrow(field)
    expect(() => format({ schema: null, description: 'why' })).toThrow(field)
    expect(() => format({ schema: { description: 'other' }, description: 'why' })).toThrow(field)
    expect(format({ schema: null })).toEqual({
      maxOutputTokens: 10,
      responseMimeType: 'application/json',
    })
  })

  it('json_schema with a description: a schema class goes as its toJSON writes it, the description beside (as without one)', () => {
    class Schema {
      readonly raw = 'not a keyword'
      constructor(private readonly written: object) {}
      toJSON() {
        return this.written
      }
    }
    const written = { type: 'object', properties: { city: { type: 'string' } } }
    const sent = (json_schema: Record<string, unknown>) =>
      JSON.parse(
        JSON.stringify(
          build({
            response_format: { type: 'json_schema', json_schema: { name: 'a', ...json_schema } },
          })['generationConfig'],
        ),
      ).responseJsonSchema
    expect(sent({ schema: new Schema(written) })).toEqual(written)
    expect(sent({ schema: new Schema(written), description: 'why' })).toEqual({
      description: 'why',
      ...written,
    })
    // Its own description is the one it writes.
    const own = new Schema({ ...written, description: 'why' })
    expect(sent({ schema: own, description: 'why' })).toEqual({ ...written, description: 'why' })
  })

  it('a tool_choice object with a key beyond type and function.name throws naming the key; obfuscation throws', () => {
    expect(() =>
      withTools({ tool_choice: { type: 'function', function: { name: 'f' }, extra: 1 } }),
    ).toThrow('tool_choice.extra: ')
    expect(() =>
      withTools({ tool_choice: { type: 'function', function: { name: 'f', strict: true } } }),
    ).toThrow('tool_choice.function.strict: ')
    expect(
      build({ stream_options: { include_usage: true, include_obfuscation: false } }),
    ).not.toHaveProperty('stream_options')
    expect(() => build({ stream_options: { include_obfuscation: true } })).toThrow(
      'stream_options.include_obfuscation: ',
    )
  })
})

describe('messages Gemini cannot carry as written', () => {
  const withCall = (args: unknown, rawArguments: string) =>
    gemini.buildRequest(
      {
        messages: [
          { role: 'user', content: 'hi' },
          {
            role: 'assistant',
            content: [{ type: 'tool_call', id: 'a', name: 'f', arguments: args, rawArguments }],
          },
        ],
        maxTokens: 10,
      },
      'g',
    ).body as { contents: { parts: { functionCall?: { args: unknown } }[] }[] }

  it('tool-call arguments: a JSON object is the args, empty text is {}; any other value throws naming the call', () => {
    expect(withCall({ q: 'x' }, '{"q":"x"}').contents[1]?.parts[0]?.functionCall?.args).toEqual({
      q: 'x',
    })
    expect(withCall({}, ' ').contents[1]?.parts[0]?.functionCall?.args).toEqual({})
    for (const [value, text] of [
      [null, 'null'],
      ['s', '"s"'],
      [[], '[]'],
      [JSON.parse('{"a": [-9007199254740993]}'), '{"a": [-9007199254740993]}'],
    ] as const) {
      expect(() => withCall(value, text), text).toThrow(
        'messages[1].tool_calls[0].function.arguments: ',
      )
    }
  })

  it('a message name throws naming the message', () => {
    expect(() =>
      gemini.buildRequest(
        { messages: [{ role: 'user', content: 'hi', name: 'alice' }], maxTokens: 10 },
        'g',
      ),
    ).toThrow('messages[0].name: Gemini has no equivalent')
  })
})
