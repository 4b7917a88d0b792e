import { afterEach, describe, expect, it } from 'vitest'
import {
  anthropicErrors,
  type FakeProvider,
  reply,
  startFakeProvider,
} from '../../src/providers/index.js'
import { anthropicMessages } from '../../src/providers/wire/anthropicMessages.js'
import { postAnthropicMessages } from '../support/fakeChat.js'
import { readSse } from './sse.js'

interface AnthropicEvent {
  type: string
  index?: number
  content_block?: unknown
  delta: {
    type: string
    text?: string
    thinking?: string
    signature?: string
    partial_json?: string
    stop_reason?: string
  }
}

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const messages = (base: string, body: Record<string, unknown> = {}) =>
  postAnthropicMessages(base, body, { model: 'claude-opus-4-6', maxTokens: 1024 })

/** Claude thinks only when the request turns thinking on (see anthropicThinkingAsked.test.ts). */
const THINKING = { max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 } }

const thoughtful = reply.text('The answer is 4.', {
  thinking: 'Two plus two is four.',
  signature: 'EqQBCkYIBxgCKkBfake',
  usage: { inputTokens: 12 },
})

describe('fake Anthropic Messages', () => {
  it('answers JSON with thinking (text + signature), text, stop_reason, usage and a request-id header', async () => {
    fake = await startFakeProvider({ dialect: 'anthropic', reply: thoughtful })
    const res = await messages(fake.baseURL, THINKING)
    expect(res.status).toBe(200)
    expect(res.headers.get('request-id')).toMatch(/^req_msg_/)
    expect(await res.json()).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-opus-4-6',
      content: [
        { type: 'thinking', thinking: 'Two plus two is four.', signature: 'EqQBCkYIBxgCKkBfake' },
        { type: 'text', text: 'The answer is 4.' },
      ],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 11 },
    })
    expect(fake.requests[0]).toMatchObject({
      route: 'anthropic-messages',
      apiKey: 'sk-ant-test',
      model: 'claude-opus-4-6',
    })
  })

  it('streams the real event sequence, thinking_delta and signature_delta included', async () => {
    fake = await startFakeProvider({ dialect: 'anthropic', reply: thoughtful })
    const stream = await readSse(await messages(fake.baseURL, { ...THINKING, stream: true }))
    const names = stream.events.map((e) => e.event)
    const collapsed = names.filter((n, i) => n !== names[i - 1])
    // The ping after the first block opens, as the API sends it (the docs'
    // streaming example; raw chunks in BerriAI/litellm#5063).
    expect(collapsed).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ])
    const data = stream.events.map((e) => JSON.parse(e.data) as AnthropicEvent)
    expect(data.every((d, i) => d.type === names[i])).toBe(true)
    const deltas = data.filter((d) => d.type === 'content_block_delta').map((d) => d.delta)
    expect(
      deltas
        .filter((d) => d.type === 'thinking_delta')
        .map((d) => d.thinking)
        .join(''),
    ).toBe('Two plus two is four.')
    expect(deltas.filter((d) => d.type === 'signature_delta')).toEqual([
      { type: 'signature_delta', signature: 'EqQBCkYIBxgCKkBfake' },
    ])
    expect(
      deltas
        .filter((d) => d.type === 'text_delta')
        .map((d) => d.text)
        .join(''),
    ).toBe('The answer is 4.')
    expect(
      data.find((d) => d.type === 'content_block_start' && d.index === 0)!.content_block,
    ).toEqual({ type: 'thinking', thinking: '', signature: '' })
    expect(data.find((d) => d.type === 'message_delta')).toMatchObject({
      delta: { stop_reason: 'end_turn' },
      usage: { output_tokens: 11 },
    })
    expect(data[0]).toMatchObject({ message: { usage: { input_tokens: 12 } } })
  })

  it('reports prompt-cache reads and writes beside input_tokens, which leaves them out, JSON and streamed', async () => {
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: reply.text('ok', {
        usage: { inputTokens: 100, cachedInputTokens: 70, cacheCreationInputTokens: 20 },
      }),
    })
    const cache = {
      input_tokens: 10,
      cache_read_input_tokens: 70,
      cache_creation_input_tokens: 20,
    }
    expect(
      ((await (await messages(fake.baseURL)).json()) as { usage: unknown }).usage,
    ).toMatchObject({
      ...cache,
      cache_creation: { ephemeral_5m_input_tokens: 20, ephemeral_1h_input_tokens: 0 },
    })
    const stream = await readSse(await messages(fake.baseURL, { stream: true }))
    const data = stream.events.map(
      (e) => JSON.parse(e.data) as { usage?: unknown; message?: { usage: unknown } },
    )
    expect(data[0]?.message?.usage).toMatchObject(cache)
    expect(data.find((d) => d.usage !== undefined)?.usage).toMatchObject(cache)
  })

  it('refuses cache counts larger than the input they are part of, naming them', async () => {
    // Where the reply is written; a script function's hand-built reply, at request time.
    expect(() => reply.text('ok', { usage: { inputTokens: 10, cachedInputTokens: 11 } })).toThrow(
      RangeError,
    )
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: () => ({
        kind: 'text',
        text: 'ok',
        usage: { inputTokens: 10, cachedInputTokens: 11 },
      }),
    })
    const res = await messages(fake.baseURL)
    expect(res.status).toBe(500)
    expect(await res.text()).toMatch(/cachedInputTokens/)
  })

  it('streams a tool_use block as input_json_delta pieces and stops with tool_use', async () => {
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: {
        kind: 'text',
        toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: { city: '東京' } }],
      },
    })
    const stream = await readSse(await messages(fake.baseURL, { stream: true }))
    const data = stream.events.map((e) => JSON.parse(e.data) as AnthropicEvent)
    expect(data.find((d) => d.type === 'content_block_start')!.content_block).toEqual({
      type: 'tool_use',
      id: 'toolu_1',
      name: 'get_weather',
      input: {},
    })
    const json = data
      .filter((d) => d.delta?.type === 'input_json_delta')
      .map((d) => d.delta.partial_json)
      .join('')
    expect(JSON.parse(json)).toEqual({ city: '東京' })
    expect(data.find((d) => d.type === 'message_delta')!.delta.stop_reason).toBe('tool_use')
  })

  it('maps finish reasons: length → max_tokens', async () => {
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: reply.text('cut', { finishReason: 'length' }),
    })
    expect(await (await messages(fake.baseURL)).json()).toMatchObject({ stop_reason: 'max_tokens' })
  })

  it('answers 529 overloaded_error in Anthropic’s error shape', async () => {
    fake = await startFakeProvider({ dialect: 'anthropic', reply: anthropicErrors.overloaded() })
    const res = await messages(fake.baseURL)
    expect(res.status).toBe(529)
    expect(res.headers.get('x-should-retry')).toBeNull()
    expect(await res.json()).toEqual({
      type: 'error',
      error: { details: null, type: 'overloaded_error', message: 'Overloaded' },
      request_id: 'req_011CFakeHourglass',
    })
  })

  it('a 429 carries retry-after and the anthropic-ratelimit reset header', async () => {
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: anthropicErrors.rateLimited({ retryAfterS: 3 }),
    })
    const res = await messages(fake.baseURL)
    expect(res.status).toBe(429)
    expect(res.headers.get('retry-after')).toBe('3')
    expect(Date.parse(res.headers.get('anthropic-ratelimit-requests-reset')!)).toBeGreaterThan(
      Date.now(),
    )
    expect(await res.json()).toMatchObject({ error: { type: 'rate_limit_error' } })
  })

  it('a 429 speaks of one limit: the one whose remaining count is 0 is the one its message names', async () => {
    fake = await startFakeProvider({ dialect: 'anthropic', reply: anthropicErrors.rateLimited() })
    const res = await messages(fake.baseURL)
    expect(res.status).toBe(429)
    // Every 429 carries the whole set, as Anthropic's do; only the request count is spent.
    expect(res.headers.get('anthropic-ratelimit-requests-remaining')).toBe('0')
    for (const kind of ['input-tokens', 'output-tokens', 'tokens']) {
      expect(Number(res.headers.get(`anthropic-ratelimit-${kind}-remaining`))).toBeGreaterThan(0)
    }
    const { error } = (await res.json()) as { error: { type: string; message: string } }
    expect(error.type).toBe('rate_limit_error')
    expect(error.message).toMatch(/rate limit of 50 requests per minute/)
    expect(error.message).not.toMatch(/tokens/)
  })

  it.each([
    ['input_tokens', 'input-tokens', /30,000 input tokens per minute/],
    ['output_tokens', 'output-tokens', /8,000 output tokens per minute/],
  ] as const)(
    'rateLimited({ limit: %j }) spends that token limit, and says so',
    async (limit, header, words) => {
      fake = await startFakeProvider({
        dialect: 'anthropic',
        reply: anthropicErrors.rateLimited({ limit, retryAfterS: 5 }),
      })
      const res = await messages(fake.baseURL)
      expect(res.status).toBe(429)
      expect(res.headers.get('retry-after')).toBe('5')
      expect(res.headers.get(`anthropic-ratelimit-${header}-remaining`)).toBe('0')
      expect(Number(res.headers.get('anthropic-ratelimit-requests-remaining'))).toBeGreaterThan(0)
      expect(Date.parse(res.headers.get(`anthropic-ratelimit-${header}-reset`)!)).toBeGreaterThan(
        Date.now(),
      )
      const { error } = (await res.json()) as { error: { message: string } }
      expect(error.message).toMatch(words)
      expect(error.message).not.toMatch(/requests per minute/)
    },
  )

  it('sends event: error after a 200 and some tokens, then ends the stream', async () => {
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: anthropicErrors.overloadedInStream({ afterTokens: 2, text: 'one two three four' }),
    })
    const res = await messages(fake.baseURL, { stream: true })
    expect(res.status).toBe(200)
    const stream = await readSse(res)
    expect(stream.error).toBeUndefined()
    const last = stream.events.at(-1)!
    expect(last.event).toBe('error')
    expect(JSON.parse(last.data)).toMatchObject({
      type: 'error',
      error: { type: 'overloaded_error' },
    })
    const text = stream.events
      .filter((e) => e.event === 'content_block_delta')
      .map((e) => (JSON.parse(e.data) as { delta: { text: string } }).delta.text)
      .join('')
    expect(text).toBe('one two')
    expect(stream.events.some((e) => e.event === 'message_stop')).toBe(false)
    expect(fake.requests[0]).toMatchObject({ outcome: 'stream-error', tokensSent: 2, paid: true })
  })

  it('an error frame before any token is not a paid generation', async () => {
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: anthropicErrors.overloadedInStream(),
    })
    const stream = await readSse(await messages(fake.baseURL, { stream: true }))
    expect(stream.events.map((e) => e.event)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'error',
    ])
    expect(fake.paidGenerations).toBe(0)
  })
})

describe('fake Anthropic Messages, long answers', () => {
  it('frames an answer of 200 000 text tokens (a spread of that many deltas overflowed the stack, and the fake dropped the connection unanswered)', () => {
    const textTokens = Array.from({ length: 200_000 }, (_, i) => `w${i} `)
    const frames = anthropicMessages.frames({
      dialect: 'anthropic',
      model: 'claude-opus-4-6',
      id: 'msg_long',
      created: 0,
      thinkingTokens: [],
      signature: undefined,
      textTokens,
      toolCalls: [],
      finishReason: 'stop',
      inputTokens: 1,
      outputTokens: textTokens.length,
      includeUsage: false,
      cachedInputTokens: 0,
      cacheCreationInputTokens: 0,
    })
    expect(frames.filter((f) => f.token === true)).toHaveLength(textTokens.length)
    expect(frames.at(-1)?.text).toContain('message_stop')
  })
})
