import { afterEach, describe, expect, it } from 'vitest'
import {
  byteChunks,
  type ReplayServer,
  startReplayServer,
} from '../../../../test/support/replayServer.js'
import { anthropic as anthropicAdapter } from '../../src/adapters/anthropic.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import { isProviderReplyError } from '../../src/errors/ProviderReplyError.js'
import type { ChatMessage, ToolDefinition } from '../../src/types.js'
import { streamThrough, textOf } from './support/streamThrough.js'

const anthropic = dialects.anthropic

let server: ReplayServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const sse = (event: string, data: object) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`

describe('Anthropic Messages translation', () => {
  const hi = [{ role: 'user' as const, content: 'hi' }]

  /** The answer callModel makes of `stream` (an Anthropic SSE body) served by a replay server. */
  async function streamedAnswer(stream: string) {
    server = await startReplayServer(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: [stream],
    }))
    return callModel({
      models: [anthropicAdapter({ baseURL: server.url, apiKey: 'k', model: 'm' })],
      request: { messages: hi, maxTokens: 64, stream: true },
      limits: { admission: false },
    }).result
  }

  it('sends no neutral temperature or top_p beside the other (Claude 4.5 and later refuse both)', () => {
    const sampling = (
      temperature: number | undefined,
      topP: number | undefined,
      model = 'claude-sonnet-4-5',
    ) => {
      const { body } = anthropic.buildRequest(
        { maxTokens: 10, messages: hi, temperature, topP },
        model,
      )
      return { temperature: body['temperature'], top_p: body['top_p'] }
    }
    expect(sampling(0.7, 1)).toEqual({ temperature: 0.7, top_p: undefined })
    expect(sampling(1, 1)).toEqual({ temperature: 1, top_p: undefined })
    expect(sampling(1, 0.9)).toEqual({ temperature: undefined, top_p: 0.9 })
    expect(sampling(undefined, 0.9)).toEqual({ temperature: undefined, top_p: 0.9 })
    expect(sampling(1, undefined)).toEqual({ temperature: 1, top_p: undefined })
    // Both changing sampling: sent as they are to the models that take both
    // (Sonnet 4 here); refused to those that refuse both (anthropicDeprecatedSampling).
    expect(sampling(0.7, 0.9, 'claude-sonnet-4-20250514')).toEqual({
      temperature: 0.7,
      top_p: 0.9,
    })
  })

  it('refuses a stop sequence that is empty or only whitespace (Anthropic answers 400 to it), naming it', () => {
    const refusal = (stop: string[]) => {
      try {
        anthropic.buildRequest({ maxTokens: 10, messages: hi, stop }, 'claude-sonnet-4-5')
        return undefined
      } catch (error) {
        return (error as { field?: string }).field
      }
    }
    expect(refusal(['\n'])).toBe('stop')
    expect(refusal(['END', ' \t\n'])).toBe('stop[1]')
    expect(refusal(['', 'END'])).toBe('stop[0]')
    expect(refusal(['\nEND', ' x '])).toBeUndefined()
  })

  it('builds the request: system extracted, tool results in a user turn, signed thinking kept, unsigned dropped', () => {
    const built = anthropic.buildRequest(
      {
        maxTokens: 1024,
        stop: ['###'],
        stream: true,
        tools: [{ name: 'lookup', parameters: { type: 'object', properties: {} } }],
        messages: [
          { role: 'system', content: 'Rule one.' },
          { role: 'system', content: 'Rule two.' },
          { role: 'user', content: 'Find it' },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'signed thought', signature: 'EqQBCgIYAh' },
              { type: 'thinking', thinking: 'stripped after a fallback' },
              { type: 'text', text: 'Looking.' },
              { type: 'tool_call', id: 'toolu_01', name: 'lookup', arguments: { q: 'x' } },
            ],
          },
          {
            role: 'tool',
            content: [
              { type: 'tool_result', toolCallId: 'toolu_01', content: 'found', isError: false },
            ],
          },
          { role: 'user', content: 'thanks' },
        ],
      },
      'claude-opus-4-6',
    )
    expect(built.path).toBe('/v1/messages')
    expect(built.headers).toEqual({ 'anthropic-version': '2023-06-01' })
    expect(built.body).toEqual({
      model: 'claude-opus-4-6',
      max_tokens: 1024,
      system: 'Rule one.\n\nRule two.',
      stop_sequences: ['###'],
      stream: true,
      tools: [{ name: 'lookup', input_schema: { type: 'object', properties: {} } }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Find it' }] },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'signed thought', signature: 'EqQBCgIYAh' },
            { type: 'text', text: 'Looking.' },
            { type: 'tool_use', id: 'toolu_01', name: 'lookup', input: { q: 'x' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_01', content: 'found' },
            { type: 'text', text: 'thanks' },
          ],
        },
      ],
    })
  })

  it('parses thinking with its signature, text, tool_use, usage with cache tokens, and the request-id header', async () => {
    const message = {
      id: 'msg_01',
      type: 'message',
      role: 'assistant',
      model: 'claude-opus-4-6',
      content: [
        {
          type: 'thinking',
          thinking: 'Let me check.',
          signature: 'WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve',
        },
        { type: 'text', text: '我来查一下。' },
        { type: 'tool_use', id: 'toolu_01A', name: 'lookup', input: { q: '天气' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: {
        input_tokens: 100,
        cache_creation_input_tokens: 20,
        cache_read_input_tokens: 5,
        output_tokens: 42,
      },
    }
    server = await startReplayServer(() => ({
      status: 200,
      headers: { 'content-type': 'application/json', 'request-id': 'req_018EeWyXxfu5pfWkrYcMdjWG' },
      chunks: [JSON.stringify(message)],
    }))
    const res = await fetch(server.url)
    expect(anthropic.parseResponse(await res.text(), { headers: res.headers })).toEqual({
      id: 'msg_01',
      model: 'claude-opus-4-6',
      provider: 'anthropic',
      content: [
        {
          type: 'thinking',
          thinking: 'Let me check.',
          signature: 'WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve',
        },
        { type: 'text', text: '我来查一下。' },
        { type: 'tool_call', id: 'toolu_01A', name: 'lookup', arguments: { q: '天气' } },
      ],
      text: '我来查一下。',
      finishReason: 'tool_calls',
      usage: {
        inputTokens: 125,
        outputTokens: 42,
        cachedInputTokens: 5,
        cacheCreationInputTokens: 20,
      },
      providerRequestId: 'req_018EeWyXxfu5pfWkrYcMdjWG',
    })
  })

  it.each([
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['max_tokens', 'length'],
    ['tool_use', 'tool_calls'],
    ['refusal', 'content_filter'],
    ['something_new', 'unknown'],
  ])('stop_reason %s maps to %s', (stopReason, finish) => {
    const parsed = anthropic.parseResponse({
      id: 'm',
      type: 'message',
      model: 'c',
      content: [],
      stop_reason: stopReason,
      usage: {},
    })
    expect(parsed.finishReason).toBe(finish)
  })

  it('streams thinking, its signature, text split inside characters, tool input deltas and one finish', async () => {
    const stream =
      sse('message_start', {
        type: 'message_start',
        message: {
          id: 'msg_s',
          type: 'message',
          role: 'assistant',
          model: 'claude-opus-4-6',
          content: [],
          stop_reason: null,
          usage: { input_tokens: 25, output_tokens: 1 },
        },
      }) +
      sse('content_block_start', {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'thinking', thinking: '' },
      }) +
      sse('content_block_delta', {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'thinking_delta', thinking: '想一想' },
      }) +
      sse('content_block_delta', {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'signature_delta', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3h' },
      }) +
      sse('content_block_stop', { type: 'content_block_stop', index: 0 }) +
      sse('ping', { type: 'ping' }) +
      sse('content_block_start', {
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'text', text: '' },
      }) +
      sse('content_block_delta', {
        type: 'content_block_delta',
        index: 1,
        delta: { type: 'text_delta', text: '你好😀' },
      }) +
      sse('content_block_stop', { type: 'content_block_stop', index: 1 }) +
      sse('content_block_start', {
        type: 'content_block_start',
        index: 2,
        content_block: { type: 'tool_use', id: 'toolu_9', name: 'lookup', input: {} },
      }) +
      sse('content_block_delta', {
        type: 'content_block_delta',
        index: 2,
        delta: { type: 'input_json_delta', partial_json: '{"q": "' },
      }) +
      sse('content_block_delta', {
        type: 'content_block_delta',
        index: 2,
        delta: { type: 'input_json_delta', partial_json: '天气"}' },
      }) +
      sse('content_block_stop', { type: 'content_block_stop', index: 2 }) +
      sse('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: 'tool_use', stop_sequence: null },
        usage: { output_tokens: 89 },
      }) +
      sse('message_stop', { type: 'message_stop' })
    server = await startReplayServer(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: byteChunks(stream, 2),
    }))
    const parser = anthropic.createStreamParser()
    const { events } = await streamThrough(await fetch(server.url), parser)
    expect(events).toEqual([
      { type: 'thinking', thinking: '想一想' },
      { type: 'signature', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3h' },
      { type: 'text', text: '你好😀' },
      { type: 'tool_call', id: 'toolu_9', name: 'lookup', argumentsDelta: '', index: 0 },
      { type: 'tool_call', id: 'toolu_9', name: 'lookup', argumentsDelta: '{"q": "', index: 0 },
      { type: 'tool_call', id: 'toolu_9', name: 'lookup', argumentsDelta: '天气"}', index: 0 },
      {
        type: 'finish',
        finishReason: 'tool_calls',
        usage: { inputTokens: 25, outputTokens: 89 },
        id: 'msg_s',
        // message_start's `message.model`: the model answering.
        model: 'claude-opus-4-6',
      },
    ])
    expect(parser.done).toBe(true)
  })

  it('a compatible server that opens a block with its content (text, thinking, a tool_use input given whole) loses none of it', async () => {
    // Anthropic opens each block empty; a server that speaks its wire for
    // another model (LiteLLM's, a translator) may put the first piece — or
    // the whole of it — in `content_block_start`, which Anthropic's SDK keeps
    // (MessageStream: the start is the block's snapshot, pieces added to it).
    const block = (index: number, content_block: object) =>
      sse('content_block_start', { type: 'content_block_start', index, content_block }) +
      sse('content_block_stop', { type: 'content_block_stop', index })
    const stream =
      sse('message_start', {
        type: 'message_start',
        message: { id: 'msg_c', type: 'message', role: 'assistant', model: 'm', content: [] },
      }) +
      block(0, { type: 'thinking', thinking: 'Look it up.', signature: 'sig-1' }) +
      sse('content_block_start', {
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'text', text: 'Checking ' },
      }) +
      sse('content_block_delta', {
        type: 'content_block_delta',
        index: 1,
        delta: { type: 'text_delta', text: 'now.' },
      }) +
      sse('content_block_stop', { type: 'content_block_stop', index: 1 }) +
      // Whole in its start, no piece after it (an id past 2^53 keeps its digits).
      'event: content_block_start\ndata: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_c1","name":"lookup","input":{"q":"weather","id":9007199254740993}}}\n\n' +
      sse('content_block_stop', { type: 'content_block_stop', index: 2 }) +
      // Given in its start and again as pieces: the pieces win, as in the SDK.
      sse('content_block_start', {
        type: 'content_block_start',
        index: 3,
        content_block: { type: 'tool_use', id: 'toolu_c2', name: 'lookup', input: { q: 'x' } },
      }) +
      sse('content_block_delta', {
        type: 'content_block_delta',
        index: 3,
        delta: { type: 'input_json_delta', partial_json: '{"q":"news"}' },
      }) +
      sse('content_block_stop', { type: 'content_block_stop', index: 3 }) +
      sse('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: 'tool_use', stop_sequence: null },
        usage: { input_tokens: 20, output_tokens: 30 },
      }) +
      sse('message_stop', { type: 'message_stop' })
    const answer = await streamedAnswer(stream)
    // Before: '' thinking, 'now.' alone, and the first call run with `{}`.
    expect(answer.text).toBe('Checking now.')
    expect(answer.content).toEqual([
      { type: 'thinking', thinking: 'Look it up.', signature: 'sig-1', signedBy: 'm@anthropic' },
      { type: 'text', text: 'Checking now.' },
      {
        type: 'tool_call',
        id: 'toolu_c1',
        name: 'lookup',
        arguments: { q: 'weather', id: 9007199254740992 },
        rawArguments: '{"q":"weather","id":9007199254740993}',
      },
      { type: 'tool_call', id: 'toolu_c2', name: 'lookup', arguments: { q: 'news' } },
    ])
    expect(answer.finishReason).toBe('tool_calls')
  })

  it("LiteLLM's opening piece sent in a block's start and again as its first delta is said once; a start's signature replaced by a signature_delta signs once", async () => {
    const delta = (index: number, d: object) =>
      sse('content_block_delta', { type: 'content_block_delta', index, delta: d })
    const start = (index: number, content_block: object) =>
      sse('content_block_start', { type: 'content_block_start', index, content_block })
    const stop = (index: number) => sse('content_block_stop', { type: 'content_block_stop', index })
    const stream =
      sse('message_start', {
        type: 'message_start',
        message: { id: 'msg_l', type: 'message', role: 'assistant', model: 'm', content: [] },
      }) +
      // LiteLLM's /v1/messages: the first piece in the start, then again as a delta.
      start(0, { type: 'thinking', thinking: 'Let me', signature: '' }) +
      delta(0, { type: 'thinking_delta', thinking: 'Let me' }) +
      delta(0, { type: 'thinking_delta', thinking: ' think.' }) +
      delta(0, { type: 'signature_delta', signature: 'SIG' }) +
      stop(0) +
      // Signed in its start, and again by a signature_delta: the delta's replaces it.
      start(1, { type: 'thinking', thinking: 'All of it.', signature: 'SIG-start' }) +
      delta(1, { type: 'signature_delta', signature: 'SIG-final' }) +
      stop(1) +
      start(2, { type: 'text', text: 'Hello' }) +
      delta(2, { type: 'text_delta', text: 'Hello' }) +
      delta(2, { type: 'text_delta', text: ' world.' }) +
      stop(2) +
      sse('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { input_tokens: 20, output_tokens: 30 },
      }) +
      sse('message_stop', { type: 'message_stop' })
    const answer = await streamedAnswer(stream)
    // Before: 'Let meLet me think.', a second empty thinking block signed
    // 'SIG-final' after one signed 'SIG-start', and 'HelloHello world.'.
    expect(answer.content).toEqual([
      { type: 'thinking', thinking: 'Let me think.', signature: 'SIG', signedBy: 'm@anthropic' },
      { type: 'thinking', thinking: 'All of it.', signature: 'SIG-final', signedBy: 'm@anthropic' },
      { type: 'text', text: 'Hello world.' },
    ])
    expect(answer.text).toBe('Hello world.')
  })

  it('message_delta usage is merged field by field: a null or absent input count keeps message_start’s, cache counts included', () => {
    // MessageDeltaUsage: cumulative, every input field nullable; the SDK
    // keeps a null one (anthropic-sdk-typescript src/lib/MessageStream.ts).
    const start = {
      type: 'message_start',
      message: {
        id: 'msg_u',
        type: 'message',
        role: 'assistant',
        content: [],
        usage: {
          input_tokens: 100,
          cache_creation_input_tokens: 20,
          cache_read_input_tokens: 500,
          output_tokens: 1,
        },
      },
    }
    const finishOf = (usage: object) => {
      const parser = anthropic.createStreamParser()
      for (const event of [
        start,
        { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage },
        { type: 'message_stop' },
      ]) {
        const out = parser.parseStreamEvent({ event: event.type, data: JSON.stringify(event) })
        if (out.length > 0) return out.at(-1)
      }
      return undefined
    }
    const billed = { type: 'finish', usage: { inputTokens: 620, outputTokens: 15 } }
    expect(
      finishOf({
        input_tokens: null,
        cache_creation_input_tokens: null,
        cache_read_input_tokens: null,
        output_tokens: 15,
      }),
    ).toMatchObject(billed)
    expect(finishOf({ input_tokens: 100, output_tokens: 15 })).toMatchObject(billed)
    expect(finishOf({ output_tokens: 15 })).toMatchObject(billed)
    // The real shape today repeats every count (a captured stream in
    // vercel/ai's anthropic-json-tool.1.chunks.txt): the delta's counts win.
    expect(
      finishOf({
        input_tokens: 100,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 700,
        output_tokens: 15,
      }),
    ).toMatchObject({ usage: { inputTokens: 800, outputTokens: 15 } })
  })

  it('an `event: error` overloaded_error after the 200 and some text throws retryable overload', async () => {
    const stream =
      sse('message_start', {
        type: 'message_start',
        message: { id: 'msg_e', type: 'message', content: [], usage: { input_tokens: 3 } },
      }) +
      sse('content_block_delta', {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'text_delta', text: 'Hel' },
      }) +
      sse('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })
    server = await startReplayServer(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: [stream],
    }))
    const parser = anthropic.createStreamParser()
    const seen: string[] = []
    let caught: unknown
    try {
      await streamThrough(await fetch(server.url), {
        get done() {
          return parser.done
        },
        end: () => parser.end(),
        parseStreamEvent: (m) => {
          const out = parser.parseStreamEvent(m)
          seen.push(textOf(out))
          return out
        },
      })
    } catch (error) {
      caught = error
    }
    expect(seen.join('')).toBe('Hel')
    expect(isProviderReplyError(caught) && caught.error).toMatchObject({
      kind: 'overloaded',
      retryable: true,
      status: 200,
      providerCode: 'overloaded_error',
    })
  })
})

describe('response_format json_schema → output_config.format (structured outputs)', () => {
  const schema = {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  }
  const jsonSchema = { type: 'json_schema', json_schema: { name: 'weather', strict: true, schema } }
  const build = (
    extra: Record<string, unknown>,
    model = 'claude-sonnet-4-5',
    messages: ChatMessage[] = [{ role: 'user', content: 'hi' }],
  ) =>
    dialects.anthropic.buildRequest({ messages, maxTokens: 20000, extra }, model).body as Record<
      string,
      unknown
    >

  it('goes as {type: "json_schema", schema}: no name, no strict, no response_format; merged with the effort in one output_config', () => {
    const body = build({ response_format: jsonSchema })
    expect(body['output_config']).toEqual({ format: { type: 'json_schema', schema } })
    expect(body).not.toHaveProperty('response_format')
    const thinking = build(
      { response_format: jsonSchema, reasoning_effort: 'high' },
      'claude-opus-4-6',
    )
    expect(thinking['output_config']).toEqual({
      effort: 'high',
      format: { type: 'json_schema', schema },
    })
    expect(thinking['thinking']).toMatchObject({ type: 'adaptive' })
    // The description goes as the schema's own, the caller's schema untouched.
    const described = build({
      response_format: {
        type: 'json_schema',
        json_schema: { ...jsonSchema.json_schema, description: 'A city' },
      },
    })
    expect(described['output_config']).toEqual({
      format: { type: 'json_schema', schema: { description: 'A city', ...schema } },
    })
    expect(schema).not.toHaveProperty('description')
  })

  it("moves the constraints Anthropic refuses into the description (as its SDKs do), drops the root's $schema, keeps the rest", () => {
    const zodLike = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: {
        days: { type: 'integer', minimum: 1, maximum: 14, description: 'Days ahead' },
        tags: { type: 'array', items: { type: 'string', maxLength: 9 }, minItems: 1, maxItems: 3 },
        at: {
          anyOf: [
            { type: 'string', format: 'date' },
            { type: 'string', format: 'ipv5' },
          ],
        },
      },
      required: ['days', 'tags', 'at'],
      additionalProperties: false,
    }
    const copy = structuredClone(zodLike)
    const sent = build({
      response_format: { type: 'json_schema', json_schema: { name: 'w', schema: zodLike } },
    })
    expect((sent['output_config'] as { format: unknown }).format).toEqual({
      type: 'json_schema',
      schema: {
        type: 'object',
        properties: {
          days: { type: 'integer', description: 'Days ahead\n\n{minimum: 1, maximum: 14}' },
          tags: {
            type: 'array',
            items: { type: 'string', description: '{maxLength: 9}' },
            minItems: 1,
            description: '{maxItems: 3}',
          },
          at: {
            anyOf: [
              { type: 'string', format: 'date' },
              { type: 'string', description: '{format: "ipv5"}' },
            ],
          },
        },
        required: ['days', 'tags', 'at'],
        additionalProperties: false,
      },
    })
    expect(zodLike).toEqual(copy)
  })

  it('closes each object that lists its properties and leaves additionalProperties out (OpenAI strict: false, pydantic): Anthropic takes no other', () => {
    const item = { type: 'object', properties: { name: { type: 'string' } } }
    const open = {
      type: 'object',
      properties: {
        items: { type: 'array', items: item },
        owner: { anyOf: [{ $ref: '#/$defs/Person' }, { type: 'null' }] },
        // A free-form map and an explicit word: as they came (Anthropic's 400 names them).
        extra: { type: 'object' },
        counts: { type: 'object', additionalProperties: { type: 'integer' } },
      },
      required: ['items'],
      $defs: { Person: { type: ['object', 'null'], properties: { age: { type: 'integer' } } } },
    }
    const copy = structuredClone(open)
    const sent = build({
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'o', strict: false, schema: open },
      },
    })
    expect((sent['output_config'] as { format: unknown }).format).toEqual({
      type: 'json_schema',
      schema: {
        type: 'object',
        properties: {
          items: { type: 'array', items: { ...item, additionalProperties: false } },
          owner: { anyOf: [{ $ref: '#/$defs/Person' }, { type: 'null' }] },
          extra: { type: 'object' },
          counts: { type: 'object', additionalProperties: { type: 'integer' } },
        },
        required: ['items'],
        $defs: {
          Person: {
            type: ['object', 'null'],
            properties: { age: { type: 'integer' } },
            additionalProperties: false,
          },
        },
        additionalProperties: false,
      },
    })
    expect(open).toEqual(copy)
  })

  it('json_object (no schema) and a json_schema without one throw naming the field; text is the default, not sent', () => {
    expect(() => build({ response_format: { type: 'json_object' } })).toThrow(
      'response_format.type: Anthropic has no JSON mode without a schema',
    )
    expect(() =>
      build({ response_format: { type: 'json_schema', json_schema: { name: 'x' } } }),
    ).toThrow('response_format.json_schema.schema: ')
    expect(build({ response_format: { type: 'text' } })).not.toHaveProperty('output_config')
  })

  it('to a model without structured outputs (Claude 3, Sonnet and Opus 4, Opus 4.1), or beside a prefill, throws a provider value naming response_format', () => {
    for (const model of [
      'claude-3-5-haiku-20241022',
      'claude-sonnet-4-20250514',
      'claude-opus-4-0',
      // Opus 4.1 had them in beta only (the `output_format` field and a beta header).
      'claude-opus-4-1',
      'claude-opus-4-1-20250805',
    ]) {
      let error: unknown
      try {
        build({ response_format: jsonSchema }, model)
      } catch (caught) {
        error = caught
      }
      expect(error, model).toMatchObject({ field: 'response_format', reason: 'provider_value' })
      expect(String(error)).toContain(`${model} has no structured outputs`)
    }
    for (const model of ['claude-haiku-4-5', 'claude-sonnet-5', 'claude-latest']) {
      expect(build({ response_format: jsonSchema }, model), model).toHaveProperty('output_config')
    }
    const prefill: ChatMessage[] = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: '{"city":' },
    ]
    expect(() => build({ response_format: jsonSchema }, 'claude-sonnet-4-5', prefill)).toThrow(
      'response_format: Anthropic takes no prefill',
    )
    expect(build({}, 'claude-sonnet-4-5', prefill)).not.toHaveProperty('output_config')
  })

  it("sends a schema object as JSON writes it (its toJSON's, at any level), as OpenAI's dialect does", () => {
    // A library user's schema classes: what goes out is what their toJSON returns.
    class Schema {
      constructor(private readonly written: object) {}
      toJSON() {
        return this.written
      }
    }
    const days = new Schema({ type: 'integer', minimum: 1 })
    const root = new Schema({
      type: 'object',
      properties: { days, at: { type: 'string', format: 'date' } },
      required: ['days', 'at'],
      additionalProperties: false,
    })
    const sent = build({
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'w', description: 'A forecast', schema: root },
      },
    })
    expect(JSON.parse(JSON.stringify(sent['output_config']))).toEqual({
      format: {
        type: 'json_schema',
        schema: {
          description: 'A forecast',
          type: 'object',
          properties: {
            days: { type: 'integer', description: '{minimum: 1}' },
            at: { type: 'string', format: 'date' },
          },
          required: ['days', 'at'],
          additionalProperties: false,
        },
      },
    })
  })

  it('a schema JSON cannot write (a BigInt, a cycle) throws InvalidChatRequestError naming the schema', () => {
    const field = 'response_format.json_schema.schema'
    const withBigInt = { type: 'object', properties: { n: { type: 'integer', default: 5n } } }
    const cyclic: Record<string, unknown> = { type: 'object' }
    cyclic['properties'] = { self: cyclic }
    for (const [schema, why] of [
      [withBigInt, 'it holds a BigInt'],
      [cyclic, 'it refers to itself'],
    ] as const) {
      let error: unknown
      try {
        build({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } })
      } catch (caught) {
        error = caught
      }
      expect(error, why).toMatchObject({ code: 'INVALID_CHAT_REQUEST', field })
      expect(String(error)).toContain(why)
    }
  })
})

describe('extra Chat Completions fields (request.extra)', () => {
  const build = (extra: Record<string, unknown>, tools: ToolDefinition[] = []) =>
    dialects.anthropic.buildRequest(
      { messages: [{ role: 'user', content: 'hi' }], maxTokens: 10, tools, extra },
      'claude',
    ).body as Record<string, unknown>
  const withTools = (extra: Record<string, unknown>) =>
    build(extra, [{ name: 'f', parameters: { type: 'object' } }])

  it("accepts OpenAI's own defaults that clients send explicitly (penalties 0, store false), sending none of them; refuses any other value", () => {
    const body = build({ frequency_penalty: 0, presence_penalty: 0, store: false })
    for (const field of ['frequency_penalty', 'presence_penalty', 'store']) {
      expect(body).not.toHaveProperty(field)
    }
    expect(() => build({ presence_penalty: 0.5 })).toThrow(/presence_penalty/)
    expect(() => build({ store: true })).toThrow(/store/)
  })

  it("accepts OpenAI's defaults clients fill in (service_tier auto, verbosity medium, top_logprobs 0), sending none; refuses any other value naming it", () => {
    // LiteLLM, LangChain and configs send these; refused, the request failed
    // with param "service_tier" though it asks for what an absent field does.
    const body = build({
      service_tier: 'auto',
      verbosity: 'medium',
      logprobs: false,
      top_logprobs: 0,
    })
    expect(body).toEqual(build({}))
    for (const [field, value] of [
      ['service_tier', 'priority'],
      ['service_tier', 'default'],
      ['service_tier', 'standard_only'],
      ['verbosity', 'low'],
      ['top_logprobs', 2],
      ['prompt_cache_retention', 'in_memory'],
      ['prompt_cache_retention', '24h'],
    ] as const) {
      expect(() => build({ [field]: value })).toThrow(`${field}: Anthropic has no equivalent`)
    }
    // 0 alternatives beside the tokens' own still asks for log probabilities.
    expect(() => build({ logprobs: true, top_logprobs: 0 })).toThrow(/^logprobs:/)
  })

  it('translates tool_choice, parallel_tool_calls: false and user; accepts the defaults', () => {
    expect(withTools({ tool_choice: 'required' })['tool_choice']).toEqual({ type: 'any' })
    expect(withTools({ tool_choice: 'none' })['tool_choice']).toEqual({ type: 'none' })
    expect(
      withTools({
        tool_choice: { type: 'function', function: { name: 'f' } },
        parallel_tool_calls: false,
      })['tool_choice'],
    ).toEqual({ type: 'tool', name: 'f', disable_parallel_tool_use: true })
    expect(withTools({ parallel_tool_calls: false })['tool_choice']).toEqual({
      type: 'auto',
      disable_parallel_tool_use: true,
    })
    expect(build({ user: 'u1' })['metadata']).toEqual({ user_id: 'u1' })
    const defaults = build({
      n: 1,
      logprobs: false,
      response_format: { type: 'text' },
      modalities: ['text'],
    })
    expect(Object.keys(defaults).sort()).toEqual(['max_tokens', 'messages', 'model'])
  })

  it('throws InvalidChatRequestError naming any field it has no equivalent for', () => {
    for (const [field, value] of [
      ['seed', 1],
      ['logit_bias', { '1': 1 }],
      ['n', 2],
      ['enable_thinking', true],
    ] as const) {
      expect(() => build({ [field]: value }), field).toThrow(
        `${field}: Anthropic has no equivalent`,
      )
    }
  })

  it('a temperature above 1 (OpenAI allows up to 2) throws naming temperature; 1 is sent', () => {
    const at = (temperature: number) =>
      dialects.anthropic.buildRequest(
        { messages: [{ role: 'user', content: 'hi' }], maxTokens: 10, temperature },
        'claude',
      ).body as Record<string, unknown>
    expect(at(1)['temperature']).toBe(1)
    expect(() => at(1.5)).toThrow('temperature: Anthropic takes a temperature from 0 to 1, got 1.5')
  })

  it('user and safety_identifier: one metadata.user_id when they agree, a throw naming user when they differ', () => {
    expect(build({ safety_identifier: 's1' })['metadata']).toEqual({ user_id: 's1' })
    expect(build({ user: 'u1', safety_identifier: 'u1' })['metadata']).toEqual({ user_id: 'u1' })
    expect(() => build({ user: 'u1', safety_identifier: 's2' })).toThrow('user: ')
    expect(() => build({ safety_identifier: 's2', user: 'u1' })).toThrow('user: ')
  })

  it('a tool_choice object with a key beyond type and function.name throws naming the key', () => {
    const fn = { name: 'f' }
    expect(() => withTools({ tool_choice: { type: 'function', function: fn, extra: 1 } })).toThrow(
      'tool_choice.extra: ',
    )
    expect(() =>
      withTools({ tool_choice: { type: 'function', function: { name: 'f', strict: true } } }),
    ).toThrow('tool_choice.function.strict: ')
    expect(() => withTools({ tool_choice: { type: 'allowed_tools', allowed_tools: {} } })).toThrow(
      'tool_choice: ',
    )
    // null is "not set".
    expect(
      withTools({ tool_choice: { type: 'function', function: fn, extra: null } })['tool_choice'],
    ).toEqual({ type: 'tool', name: 'f' })
  })

  it('without tools, tool_choice auto or none and parallel_tool_calls are not sent (Anthropic answers 400: "tool_choice may only be specified while providing tools"); a demanded call throws naming tool_choice', () => {
    for (const extra of [
      { parallel_tool_calls: false },
      { tool_choice: 'auto' },
      { tool_choice: 'none', parallel_tool_calls: false },
    ]) {
      expect(build(extra), JSON.stringify(extra)).not.toHaveProperty('tool_choice')
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

  it('an empty tools list in extra is no tools: left out with the settings, not refused as a field without an equivalent', () => {
    const body = build({ tools: [], tool_choice: 'auto' })
    expect(body).not.toHaveProperty('tools')
    expect(body).not.toHaveProperty('tool_choice')
  })

  it('stream_options: usage and no obfuscation are what it does anyway; obfuscation throws', () => {
    expect(
      build({ stream_options: { include_usage: false, include_obfuscation: false } }),
    ).not.toHaveProperty('stream_options')
    expect(() => build({ stream_options: { include_obfuscation: true } })).toThrow(
      'stream_options.include_obfuscation: ',
    )
  })
})

describe('messages Anthropic cannot carry as written', () => {
  const withCall = (args: unknown, rawArguments?: string) =>
    dialects.anthropic.buildRequest(
      {
        messages: [
          { role: 'user', content: 'hi' },
          {
            role: 'assistant',
            content: [
              { type: 'tool_call', id: 'a', name: 'f', arguments: {}, rawArguments: '{}' },
              {
                type: 'tool_call',
                id: 'b',
                name: 'f',
                arguments: args,
                ...(rawArguments === undefined ? {} : { rawArguments }),
              },
            ],
          },
        ],
        maxTokens: 10,
      },
      'claude',
    ).body as { messages: { content: { input?: unknown }[] }[] }

  it('tool-call arguments: a JSON object is the input, empty text is {}; any other value throws naming the call', () => {
    expect(withCall({ q: 'x' }, '{"q": "x"}').messages[1]?.content[1]?.input).toEqual({ q: 'x' })
    expect(withCall({}, '').messages[1]?.content[1]?.input).toEqual({})
    // A caller's own value, with no text: as it is, absent as {}.
    expect(withCall(undefined).messages[1]?.content[1]?.input).toEqual({})
    const field = 'messages[1].tool_calls[1].function.arguments: '
    for (const [value, text] of [
      [null, 'null'],
      ['just a string', '"just a string"'],
      ['not json', 'not json'],
      [[1], '[1]'],
      [42, '42'],
      [JSON.parse('{"id": 12345678901234567890}'), '{"id": 12345678901234567890}'],
    ] as const) {
      expect(() => withCall(value, text), text).toThrow(field)
    }
    expect(() => withCall('text')).toThrow(field)
  })

  it('a message name throws naming the message', () => {
    expect(() =>
      dialects.anthropic.buildRequest(
        {
          messages: [
            { role: 'user', content: 'hi' },
            { role: 'system', content: 'x', name: 'rules' },
          ],
          maxTokens: 10,
        },
        'claude',
      ),
    ).toThrow('messages[1].name: Anthropic has no equivalent')
  })
  it('sends no whitespace-only text block (Anthropic answers 400: "text content blocks must contain non-whitespace text")', () => {
    const { body } = anthropic.buildRequest(
      {
        maxTokens: 10,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'hi' },
              { type: 'text', text: ' \n' },
            ],
          },
          { role: 'assistant', content: '\n\n' },
          { role: 'user', content: ' x ' },
        ],
      },
      'claude',
    )
    expect(body['messages']).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'hi' },
          { type: 'text', text: ' x ' },
        ],
      },
    ])
    // A last user message of whitespace alone is the empty last turn: refused, naming it.
    expect(() =>
      anthropic.buildRequest(
        {
          maxTokens: 10,
          messages: [
            { role: 'user', content: 'hi' },
            { role: 'assistant', content: 'yes' },
            { role: 'user', content: '  ' },
          ],
        },
        'claude',
      ),
    ).toThrow('messages[2].content')
  })
  it('a text block of only a BOM (U+FEFF) is blank as whitespace is: Anthropic counts zero-width characters as whitespace in that check', () => {
    // Beside other content it is left out; the message still goes.
    const { body } = anthropic.buildRequest(
      {
        maxTokens: 10,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: '\uFEFF' },
              { type: 'text', text: 'hi' },
            ],
          },
        ],
      },
      'claude',
    )
    expect(body['messages']).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }])
    // Alone, the message is empty: refused here, naming it, as the API would
    // refuse it (400) — nothing is sent and paid for to learn that.
    const refusal = (messages: ChatMessage[]) => {
      try {
        anthropic.buildRequest({ maxTokens: 10, messages }, 'claude')
        return undefined
      } catch (error) {
        return (error as { field?: string }).field
      }
    }
    expect(refusal([{ role: 'user', content: '\uFEFF' }])).toBe('messages')
    expect(
      refusal([
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'yes' },
        { role: 'user', content: '\uFEFF\n' },
      ]),
    ).toBe('messages[2].content')
    // A BOM before words is part of the text, sent as it is.
    const words = anthropic.buildRequest(
      { maxTokens: 10, messages: [{ role: 'user', content: '\uFEFFhi' }] },
      'claude',
    ).body['messages']
    expect(words).toEqual([{ role: 'user', content: [{ type: 'text', text: '\uFEFFhi' }] }])
  })

  it('a failed tool result with no content goes with a short placeholder (Anthropic answers 400: "content cannot be empty if `is_error` is true")', () => {
    const call = { type: 'tool_call' as const, id: 'toolu_01', name: 'f', arguments: {} }
    const failed = (content: string) =>
      anthropic.buildRequest(
        {
          maxTokens: 10,
          messages: [
            { role: 'user', content: 'hi' },
            { role: 'assistant', content: [call] },
            {
              role: 'tool',
              content: [{ type: 'tool_result', toolCallId: 'toolu_01', content, isError: true }],
            },
          ],
        },
        'claude',
      ).body['messages'] as { content: Record<string, unknown>[] }[]
    for (const empty of ['', ' \n']) {
      expect(failed(empty)[2]?.content).toEqual([
        {
          type: 'tool_result',
          tool_use_id: 'toolu_01',
          content: 'the tool failed, with no message',
          is_error: true,
        },
      ])
    }
    // A failure that says something goes as it is.
    expect(failed('timed out')[2]?.content[0]).toMatchObject({
      content: 'timed out',
      is_error: true,
    })
  })

  it('a last assistant turn (a prefill) goes without trailing whitespace (Anthropic answers 400: "final assistant content cannot end with trailing whitespace")', () => {
    const { body } = anthropic.buildRequest(
      {
        maxTokens: 10,
        messages: [
          { role: 'user', content: 'Title this' },
          { role: 'assistant', content: 'Sure.\n\n' },
          { role: 'user', content: 'Now as JSON' },
          { role: 'assistant', content: [{ type: 'text', text: '{"title": ' }] },
        ],
      },
      'claude',
    )
    const turns = body['messages'] as { role: string; content: { text: string }[] }[]
    // Only the final turn: an earlier assistant turn's whitespace is the model's own words.
    expect(turns.map((t) => t.content.map((c) => c.text))).toEqual([
      ['Title this'],
      ['Sure.\n\n'],
      ['Now as JSON'],
      ['{"title":'],
    ])
  })
})
