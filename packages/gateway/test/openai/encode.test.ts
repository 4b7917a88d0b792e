import { type ChatResponse, dialects, type StreamEvent } from '@hourglass/llm'
import OpenAI from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import {
  byteChunks,
  type ReplayServer,
  startReplayServer,
} from '../../../../test/support/replayServer.js'
import {
  OPENAI_SSE_DONE,
  OpenAIChunkEncoder,
  openAISseData,
  toOpenAIError,
  toOpenAIResponse,
} from '../../src/openai/encode.js'
import { SseRecutter } from '../../src/sse/SseRecutter.js'

let server: ReplayServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const answer: ChatResponse = {
  id: 'msg_01',
  model: 'claude-opus-4-6',
  provider: 'anthropic',
  content: [
    { type: 'thinking', thinking: '先查天气', signature: 'sig' },
    { type: 'text', text: '我来查。' },
    { type: 'tool_call', id: 'toolu_1', name: 'get_weather', arguments: { city: '北京' } },
  ],
  text: '我来查。',
  finishReason: 'tool_calls',
  usage: { inputTokens: 30, outputTokens: 12 },
}

const client = (baseURL: string) => new OpenAI({ baseURL, apiKey: 'sk-test', maxRetries: 0 })

describe('normalised → OpenAI shapes, read by the official openai client', () => {
  it("an answer's id is OpenAI's format: an upstream's chatcmpl- id kept, any other (or none, from a JavaScript caller) minted", () => {
    expect(toOpenAIResponse({ ...answer, id: 'chatcmpl-up' }).id).toBe('chatcmpl-up')
    expect(toOpenAIResponse(answer).id).toMatch(/^chatcmpl-[0-9a-f-]{36}$/)
    const { id: _, ...noId } = answer
    expect(toOpenAIResponse(noId as ChatResponse).id).toMatch(/^chatcmpl-/)
  })

  it('a whole response from another provider reads as a chat.completion', async () => {
    server = await startReplayServer(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      chunks: [
        JSON.stringify(toOpenAIResponse(answer, { model: 'smart', createdS: 1_717_000_000 })),
      ],
    }))
    const completion = await client(server.url).chat.completions.create({
      model: 'smart',
      messages: [{ role: 'user', content: 'hi' }],
    })
    const choice = completion.choices[0]!
    expect(completion.model).toBe('smart')
    expect(choice.message.content).toBe('我来查。')
    expect(choice.finish_reason).toBe('tool_calls')
    expect(choice.message.tool_calls).toEqual([
      {
        id: 'toolu_1',
        type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"北京"}' },
      },
    ])
    expect(completion.usage).toEqual({ prompt_tokens: 30, completion_tokens: 12, total_tokens: 42 })
  })

  it('a normalised stream, re-cut into 1-byte upstream chunks, streams to the client with text, tool calls and usage intact', async () => {
    const events: StreamEvent[] = [
      { type: 'thinking', thinking: '想' },
      { type: 'signature', signature: 'sig' },
      { type: 'text', text: '你好，' },
      { type: 'text', text: '世界🌏' },
      { type: 'tool_call', id: 'toolu_1', name: 'get_weather', argumentsDelta: '' },
      { type: 'tool_call', id: 'toolu_1', name: 'get_weather', argumentsDelta: '{"city":"北京"}' },
      {
        type: 'finish',
        finishReason: 'tool_calls',
        usage: { inputTokens: 30, outputTokens: 12 },
        id: 'msg_01',
      },
    ]
    const encoder = new OpenAIChunkEncoder({
      id: 'chatcmpl-gw',
      model: 'smart',
      includeUsage: true,
      createdS: 1,
    })
    const sse =
      events
        .flatMap((e) => encoder.encode(e))
        .map(openAISseData)
        .join('') + OPENAI_SSE_DONE
    // The gateway's path: arbitrary upstream cuts, re-cut on whole events before forwarding.
    const recutter = new SseRecutter()
    const forwarded = byteChunks(sse, 1).flatMap((c) => recutter.push(c) ?? [])
    server = await startReplayServer(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      chunks: forwarded,
    }))

    const stream = await client(server.url).chat.completions.create({
      model: 'smart',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'hi' }],
    })
    let text = ''
    let args = ''
    let toolName: string | undefined
    let finish: string | null | undefined
    let usage: unknown
    for await (const chunk of stream) {
      const choice = chunk.choices[0]
      text += choice?.delta.content ?? ''
      for (const call of choice?.delta.tool_calls ?? []) {
        toolName ??= call.function?.name
        args += call.function?.arguments ?? ''
      }
      if (choice?.finish_reason) finish = choice.finish_reason
      if (chunk.usage) usage = chunk.usage
    }
    expect(text).toBe('你好，世界🌏')
    expect(toolName).toBe('get_weather')
    expect(JSON.parse(args)).toEqual({ city: '北京' })
    expect(finish).toBe('tool_calls')
    expect(usage).toEqual({ prompt_tokens: 30, completion_tokens: 12, total_tokens: 42 })
  })

  it('a normalised rate limit reaches the client as OpenAI’s 429 error with its code', async () => {
    const { status, body } = toOpenAIError({
      kind: 'rate_limited',
      retryable: true,
      status: 200,
      providerCode: '336501',
      message: 'Rpm limit reached',
    })
    server = await startReplayServer(() => ({
      status,
      headers: { 'content-type': 'application/json' },
      chunks: [JSON.stringify(body)],
    }))
    let caught: unknown
    try {
      await client(server.url).chat.completions.create({
        model: 'smart',
        messages: [{ role: 'user', content: 'hi' }],
      })
    } catch (error) {
      caught = error
    }
    expect(caught).toBeInstanceOf(OpenAI.RateLimitError)
    expect(caught).toMatchObject({ status: 429, code: 'rate_limit_exceeded' })
  })

  it('a provider’s message is written on one printable line, bounded, as the gateway writes it', () => {
    const { body } = toOpenAIError({
      kind: 'bad_request',
      retryable: false,
      status: 400,
      message: `<html>\r\n<title>400</title>\u0000\u001b[31m\u202e ${'x'.repeat(900)}`,
    })
    expect(body.error.message).toMatch(/^<html> <title>400<\/title> \[31m x+…$/)
    expect(body.error.message.length).toBeLessThanOrEqual(500)
    // A message with nothing printable in it says so.
    const empty = toOpenAIError({ kind: 'bad_request', retryable: false, status: 400, message: '' })
    expect(empty.body.error.message).toBe('no reason given')
  })
})

describe('parallel calls an upstream opens before their arguments', () => {
  it('each call keeps its own arguments: no "{}" guessed for a call whose text comes after the next call opened', () => {
    // An OpenAI-compatible upstream that opens both calls in one chunk, then
    // streams each call's arguments. Sending `{}` for call 0 when call 1
    // began (it had no text yet) gave the client `{}{"city":"Paris"}`.
    const base = { id: 'u', object: 'chat.completion.chunk', created: 1, model: 'm' }
    const chunk = (delta: unknown, finish: string | null = null) =>
      JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })
    const call = (index: number, id: string, name: string) => ({
      index,
      id,
      type: 'function',
      function: { name, arguments: '' },
    })
    const wire = [
      chunk({
        role: 'assistant',
        content: null,
        tool_calls: [call(0, 'call_a', 'get_weather'), call(1, 'call_b', 'get_time')],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: '{"tz":"CET"}' } }] }),
      chunk({}, 'tool_calls'),
      '[DONE]',
    ]
    const parser = dialects.openai.createStreamParser()
    const encoder = new OpenAIChunkEncoder({ id: 'x', model: 'm' })
    const joined = new Map<number, string>()
    for (const data of wire) {
      for (const event of parser.parseStreamEvent({ event: undefined, data } as never)) {
        for (const out of encoder.encode(event)) {
          const deltas = (out as { choices: Array<{ delta: { tool_calls?: unknown[] } }> })
            .choices[0]?.delta.tool_calls as
            | Array<{ index: number; function: { arguments?: string } }>
            | undefined
          for (const d of deltas ?? []) {
            joined.set(d.index, (joined.get(d.index) ?? '') + (d.function.arguments ?? ''))
          }
        }
      }
    }
    expect([...joined]).toEqual([
      [0, '{"city":"Paris"}'],
      [1, '{"tz":"CET"}'],
    ])
  })
})
