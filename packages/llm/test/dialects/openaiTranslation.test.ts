import { afterEach, describe, expect, it } from 'vitest'
import {
  byteChunks,
  type ReplayServer,
  startReplayServer,
} from '../../../../test/support/replayServer.js'
import { dialects } from '../../src/dialects/dialects.js'
import { isProviderReplyError } from '../../src/errors/ProviderReplyError.js'
import type { ChatRequest, ToolDefinition } from '../../src/types.js'
import { streamThrough, textOf } from './support/streamThrough.js'

let server: ReplayServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const agentTurn: ChatRequest = {
  maxTokens: 512,
  temperature: 0.2,
  stop: ['END'],
  tools: [
    {
      name: 'get_weather',
      description: 'Weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    },
  ],
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: '北京天气？' },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'need the tool', signature: 'sig-1' },
        { type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: { city: '北京' } },
      ],
    },
    { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'call_1', content: '晴, 25°C' }] },
  ],
}

describe('OpenAI chat completions translation', () => {
  it('builds the request: tool calls as JSON strings, tool results as tool messages, thinking not sent', () => {
    const built = dialects.openai.buildRequest({ ...agentTurn, stream: true }, 'gpt-4o-mini')
    expect(built.path).toBe('/chat/completions')
    expect(built.body).toEqual({
      model: 'gpt-4o-mini',
      max_completion_tokens: 512,
      temperature: 0.2,
      stop: ['END'],
      stream: true,
      stream_options: { include_usage: true },
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Weather for a city',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
          },
        },
      ],
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: '北京天气？' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"北京"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '晴, 25°C' },
      ],
    })
  })

  it('the compatible providers get max_tokens, which they document', () => {
    for (const name of ['deepseek', 'qwen', 'ernie', 'doubao'] as const) {
      const body = dialects[name].buildRequest(agentTurn, 'm').body
      expect(body['max_tokens']).toBe(512)
      expect(body['max_completion_tokens']).toBeUndefined()
    }
  })

  it('parses a completion with tool calls, usage and the x-request-id from the real response', async () => {
    const completion = {
      id: 'chatcmpl-abc',
      object: 'chat.completion',
      created: 1_717_000_000,
      model: 'gpt-4o-mini-2024-07-18',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                id: 'call_9',
                type: 'function',
                function: { name: 'get_weather', arguments: '{"city":"上海"}' },
              },
            ],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 82, completion_tokens: 17, total_tokens: 99 },
    }
    server = await startReplayServer(() => ({
      status: 200,
      headers: { 'content-type': 'application/json', 'x-request-id': 'req_123' },
      chunks: [JSON.stringify(completion)],
    }))
    const res = await fetch(server.url)
    const parsed = dialects.openai.parseResponse(await res.text(), { headers: res.headers })
    expect(parsed).toEqual({
      id: 'chatcmpl-abc',
      model: 'gpt-4o-mini-2024-07-18',
      provider: 'openai',
      content: [
        {
          type: 'tool_call',
          id: 'call_9',
          name: 'get_weather',
          arguments: { city: '上海' },
          rawArguments: '{"city":"上海"}',
        },
      ],
      text: '',
      finishReason: 'tool_calls',
      usage: { inputTokens: 82, outputTokens: 17 },
      providerRequestId: 'req_123',
    })
  })

  it('DeepSeek reasoning_content becomes an unsigned thinking block', () => {
    const parsed = dialects.deepseek.parseResponse({
      id: 'x',
      model: 'deepseek-reasoner',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', reasoning_content: '先想想', content: '答案是 42' },
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 5, completion_tokens: 9 },
    })
    expect(parsed.content).toEqual([
      { type: 'thinking', thinking: '先想想' },
      { type: 'text', text: '答案是 42' },
    ])
    expect(parsed).toMatchObject({ provider: 'deepseek', text: '答案是 42', finishReason: 'stop' })
  })

  it('a 200 body without choices is not an empty success: it throws ProviderReplyError', () => {
    let caught: unknown
    try {
      dialects.openai.parseResponse('{"id":"x","object":"chat.completion"}')
    } catch (error) {
      caught = error
    }
    expect(isProviderReplyError(caught) && caught.error).toMatchObject({
      kind: 'server_error',
      retryable: true,
      status: 200,
    })
  })

  it('streams text split inside multi-byte characters, tool-call deltas, one finish with the last chunk’s usage', async () => {
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-s', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
    const sse =
      chunk({ role: 'assistant', content: '' }) +
      chunk({ content: '你好，' }) +
      chunk({ content: '世界😀' }) +
      chunk({
        tool_calls: [
          {
            index: 0,
            id: 'call_1',
            type: 'function',
            function: { name: 'get_weather', arguments: '' },
          },
        ],
      }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"北京"}' } }] }) +
      chunk({}, 'tool_calls') +
      `data: ${JSON.stringify({ id: 'chatcmpl-s', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 } })}\n\n` +
      'data: [DONE]\n\n'
    server = await startReplayServer(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: byteChunks(sse, 3),
    }))
    const parser = dialects.openai.createStreamParser()
    const { events } = await streamThrough(await fetch(server.url), parser)
    expect(textOf(events)).toBe('你好，世界😀')
    expect(events.filter((e) => e.type === 'tool_call')).toEqual([
      { type: 'tool_call', id: 'call_1', name: 'get_weather', argumentsDelta: '', index: 0 },
      {
        type: 'tool_call',
        id: 'call_1',
        name: 'get_weather',
        argumentsDelta: '{"city":',
        index: 0,
      },
      { type: 'tool_call', id: 'call_1', name: 'get_weather', argumentsDelta: '"北京"}', index: 0 },
    ])
    expect(events.filter((e) => e.type === 'finish')).toEqual([
      {
        type: 'finish',
        finishReason: 'tool_calls',
        usage: { inputTokens: 11, outputTokens: 7 },
        id: 'chatcmpl-s',
        model: 'gpt-4o-mini',
      },
    ])
    expect(parser.done).toBe(true)
  })

  it('a finish_reason of "" on every chunk, usage on every chunk too, is no finish: one finish, at the end, with the last usage', () => {
    const parser = dialects.openai.createStreamParser()
    const chunk = (content: string, finish: string, completion: number) => ({
      event: undefined,
      data: JSON.stringify({
        id: 'c',
        choices: [{ index: 0, delta: { content }, finish_reason: finish }],
        usage: { prompt_tokens: 5, completion_tokens: completion, total_tokens: 5 + completion },
      }),
    })
    const events = [
      ...parser.parseStreamEvent(chunk('one ', '', 1)),
      ...parser.parseStreamEvent(chunk('two', '', 2)),
      ...parser.parseStreamEvent(chunk('', 'stop', 2)),
      ...parser.parseStreamEvent({ event: undefined, data: '[DONE]' }),
    ]
    // Before: a finish (reason "unknown", 1 output token) right after "one ",
    // the text after it, and no finish at the end.
    expect(events.map((e) => e.type)).toEqual(['text', 'text', 'finish'])
    expect(events.at(-1)).toEqual({
      type: 'finish',
      finishReason: 'stop',
      usage: { inputTokens: 5, outputTokens: 2 },
      id: 'c',
    })
  })

  it('a refusal streams as delta.refusal and comes out as its text, as the whole answer’s does', async () => {
    // openai-openapi ChatCompletionStreamResponseDelta.refusal: with
    // structured outputs the model's refusal streams there, content null.
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-r', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`
    const sse =
      chunk({ role: 'assistant', content: null, refusal: '' }) +
      chunk({ refusal: "I'm sorry, " }) +
      chunk({ refusal: 'I cannot help with that.' }) +
      chunk({}, 'stop') +
      'data: [DONE]\n\n'
    server = await startReplayServer(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: [sse],
    }))
    const { events } = await streamThrough(
      await fetch(server.url),
      dialects.openai.createStreamParser(),
    )
    const whole = dialects.openai.parseResponse({
      id: 'chatcmpl-r',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            refusal: "I'm sorry, I cannot help with that.",
          },
          finish_reason: 'stop',
        },
      ],
    })
    expect(textOf(events)).toBe("I'm sorry, I cannot help with that.")
    expect(textOf(events)).toBe(whole.text)
  })

  it('DeepSeek `: keep-alive` comments come out as comments, never as stream events', async () => {
    const sse =
      ': keep-alive\n\n: keep-alive\n\n' +
      'data: {"id":"d","choices":[{"index":0,"delta":{"content":"好"},"finish_reason":null}]}\n\n' +
      ': keep-alive\n\n' +
      'data: {"id":"d","choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\n' +
      'data: [DONE]\n\n'
    server = await startReplayServer(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: byteChunks(sse, 5),
    }))
    const { events, comments } = await streamThrough(
      await fetch(server.url),
      dialects.deepseek.createStreamParser(),
    )
    expect(comments).toHaveLength(3)
    expect(events).toEqual([
      { type: 'text', text: '好' },
      { type: 'finish', finishReason: 'stop', usage: { inputTokens: 3, outputTokens: 1 }, id: 'd' },
    ])
  })

  it('an error data frame after a 200 and some text throws the normalised rate limit (Qwen compatible mode)', async () => {
    const sse =
      'data: {"id":"q","choices":[{"index":0,"delta":{"content":"部分"},"finish_reason":null}]}\n\n' +
      'data: {"error":{"code":"Throttling.RateQuota","message":"Requests rate limit exceeded, please try again later.","type":"Throttling.RateQuota"}}\n\n'
    server = await startReplayServer(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: [sse],
    }))
    let caught: unknown
    try {
      await streamThrough(await fetch(server.url), dialects.qwen.createStreamParser())
    } catch (error) {
      caught = error
    }
    expect(isProviderReplyError(caught) && caught.error).toMatchObject({
      kind: 'rate_limited',
      retryable: true,
      status: 200,
      providerCode: 'Throttling.RateQuota',
    })
  })
})

describe('extra Chat Completions fields (request.extra)', () => {
  it('are forwarded unchanged, never over a field the builder sets, a `__proto__` key as a field', () => {
    const extra = JSON.parse(
      '{"response_format":{"type":"json_object"},"tool_choice":"required","seed":7,"enable_thinking":false,"model":"other","__proto__":{"x":1}}',
    )
    const tools = [{ name: 'f', parameters: { type: 'object' } }]
    const built = dialects.openai.buildRequest(
      { messages: [{ role: 'user', content: 'hi' }], maxTokens: 10, tools, extra },
      'gpt-4o',
    )
    const body = built.body as Record<string, unknown>
    expect(body['response_format']).toEqual({ type: 'json_object' })
    expect(body['tool_choice']).toBe('required')
    expect(body['seed']).toBe(7)
    expect(body['enable_thinking']).toBe(false)
    expect(body['model']).toBe('gpt-4o')
    expect(body['max_completion_tokens']).toBe(10)
    expect(JSON.stringify(body)).toContain('"__proto__":{"x":1}')
    expect(Object.getPrototypeOf(body)).toBe(Object.prototype)
  })

  it("without tools, tool_choice auto or none and parallel_tool_calls are not sent (OpenAI answers 400: \"'parallel_tool_calls' is only allowed when 'tools' are specified\"); a demanded call throws naming tool_choice", () => {
    const build = (extra: Record<string, unknown>, tools: ToolDefinition[] = []) =>
      dialects.openai.buildRequest(
        { messages: [{ role: 'user', content: 'hi' }], maxTokens: 10, tools, extra },
        'gpt-4o',
      ).body as Record<string, unknown>
    for (const extra of [
      { parallel_tool_calls: false },
      { tool_choice: 'auto' },
      { tool_choice: 'none', parallel_tool_calls: true },
    ]) {
      const body = build(extra)
      expect(body, JSON.stringify(extra)).not.toHaveProperty('tool_choice')
      expect(body, JSON.stringify(extra)).not.toHaveProperty('parallel_tool_calls')
    }
    expect(() => build({ tool_choice: 'required' })).toThrow(
      'tool_choice: names tools or asks for a tool call, and the request has no tools',
    )
    const named = { type: 'function', function: { name: 'f' } }
    expect(() => build({ tool_choice: named })).toThrow('tool_choice: ')
    const tools = [{ name: 'f', parameters: { type: 'object' } }]
    expect(build({ tool_choice: named, parallel_tool_calls: false }, tools)).toMatchObject({
      tool_choice: named,
      parallel_tool_calls: false,
    })
    expect(() => build({ tool_choice: { ...named, function: { name: 'g' } } }, tools)).toThrow(
      'tool_choice.function.name: no tool named "g" in tools',
    )
    // Tools sent through extra (custom tools, wire-shaped functions) are tools: all goes as given.
    const custom = {
      tools: [{ type: 'custom', custom: { name: 'grep' } }],
      tool_choice: 'required',
    }
    expect(build(custom)).toMatchObject(custom)
    const wire = {
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      parallel_tool_calls: false,
    }
    expect(build(wire)).toMatchObject(wire)
  })

  it('DeepSeek refuses response_format json_schema before sending, naming the field (its API answers 400 "This response_format type is unavailable now"); json_object goes, and OpenAI takes json_schema', () => {
    const request = (type: string): ChatRequest => ({
      messages: [{ role: 'user', content: 'hi' }],
      maxTokens: 10,
      extra: { response_format: { type, json_schema: { name: 'x', schema: { type: 'object' } } } },
    })
    expect(() => dialects.deepseek.buildRequest(request('json_schema'), 'deepseek-chat')).toThrow(
      /^response_format\.type: "json_schema" is refused by DeepSeek/,
    )
    expect(() => dialects.deepseek.refuseFields?.(request('json_schema'))).toThrow(
      /^response_format\.type: /,
    )
    expect(
      dialects.deepseek.buildRequest(request('json_object'), 'deepseek-chat').body,
    ).toMatchObject({
      response_format: { type: 'json_object' },
    })
    expect(dialects.openai.buildRequest(request('json_schema'), 'gpt-4o').body).toMatchObject({
      response_format: { type: 'json_schema' },
    })
  })

  it('an empty tools list in extra is left out (OpenAI answers 400 "Invalid \'tools\': empty array"), and does not replace request.tools', () => {
    const build = (extra: Record<string, unknown>, tools: ToolDefinition[] = []) =>
      dialects.openai.buildRequest(
        { messages: [{ role: 'user', content: 'hi' }], maxTokens: 10, tools, extra },
        'gpt-4o',
      ).body as Record<string, unknown>
    const extra = { tools: [], tool_choice: 'auto' }
    const body = build(extra)
    expect(body).not.toHaveProperty('tools')
    expect(body).not.toHaveProperty('tool_choice')
    expect(extra.tools).toEqual([]) // the caller's object is not written to
    const tools = [{ name: 'f', parameters: { type: 'object' } }]
    expect((build({ tools: [] }, tools)['tools'] as unknown[]).length).toBe(1)
  })

  it('n other than 1 is refused before anything is sent: an answer holds one choice', () => {
    const ask = (n: unknown) => () =>
      dialects.openai.buildRequest(
        { messages: [{ role: 'user', content: 'hi' }], maxTokens: 10, stream: true, extra: { n } },
        'gpt-4o',
      )
    expect(ask(2)).toThrow(/^n: only 1/)
    expect(ask('2')).toThrow(/^n: only 1/)
    expect((ask(1)().body as Record<string, unknown>)['n']).toBe(1)
    expect(ask(null)).not.toThrow()
  })

  it('stream_options ride beside the include_usage: true the builder always asks for', () => {
    const built = dialects.openai.buildRequest(
      {
        messages: [{ role: 'user', content: 'hi' }],
        maxTokens: 10,
        stream: true,
        extra: { stream_options: { include_usage: false, include_obfuscation: false } },
      },
      'gpt-4o',
    )
    expect((built.body as Record<string, unknown>)['stream_options']).toEqual({
      include_usage: true,
      include_obfuscation: false,
    })
  })
})

describe('what the client wrote, sent as written', () => {
  const call = (args: unknown, rawArguments?: string) =>
    ({
      type: 'tool_call',
      id: 'c',
      name: 'f',
      arguments: args,
      ...(rawArguments === undefined ? {} : { rawArguments }),
    }) as const
  const argumentsSent = (block: ReturnType<typeof call>) => {
    const body = dialects.qwen.buildRequest(
      { messages: [{ role: 'assistant', content: [block] }], maxTokens: 10 },
      'qwen-plus',
    ).body as { messages: { tool_calls: { function: { arguments: string } }[] }[] }
    return body.messages[0]?.tool_calls[0]?.function.arguments
  }

  it('tool-call arguments received as text go unchanged; a value without text is serialised', () => {
    const big = '{"id": 12345678901234567890}'
    expect(argumentsSent(call(JSON.parse(big), big))).toBe(big)
    expect(argumentsSent(call('just a string', '"just a string"'))).toBe('"just a string"')
    expect(argumentsSent(call(null, 'null'))).toBe('null')
    expect(argumentsSent(call({}, ''))).toBe('')
    expect(argumentsSent(call({ city: 'Paris' }))).toBe('{"city":"Paris"}')
  })

  it('a message name goes on its message; a tool message, which carries none, throws naming it', () => {
    const body = dialects.openai.buildRequest(
      {
        messages: [
          { role: 'system', content: 'Be brief.', name: 'rules' },
          { role: 'user', content: 'hi', name: 'alice' },
          { role: 'assistant', content: [call({}, '{}')], name: 'bot' },
        ],
        maxTokens: 10,
      },
      'gpt-4o',
    ).body as { messages: { name?: string }[] }
    expect(body.messages.map((m) => m.name)).toEqual(['rules', 'alice', 'bot'])
    expect(() =>
      dialects.openai.buildRequest(
        {
          messages: [
            {
              role: 'tool',
              name: 'x',
              content: [{ type: 'tool_result', toolCallId: 'c', content: 'ok' }],
            },
          ],
          maxTokens: 10,
        },
        'gpt-4o',
      ),
    ).toThrow('messages[0].name: ')
  })
})
