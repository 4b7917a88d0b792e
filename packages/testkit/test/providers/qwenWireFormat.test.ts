/**
 * Qwen's compatible mode (DashScope `compatible-mode/v1/chat/completions`)
 * as Model Studio's docs show it, where it differs from OpenAI's:
 *
 * - every chunk says `"usage":null` and `"system_fingerprint":null`, asked
 *   for usage or not (a qwen3-max stream with only `"stream": true`; the
 *   qwen-plus streams with `include_usage`, which end with a `choices: []`
 *   usage chunk);
 * - a whole answer's and the usage chunk's usage counts the cache, zeros
 *   included: `"prompt_tokens_details":{"cached_tokens":0}` (qwen-plus,
 *   qwen-flash, qwen-turbo answers of 2025 and 2026; a qwen-max usage
 *   chunk), and in thinking mode `completion_tokens_details.reasoning_tokens`;
 * - the finishing chunk's delta is `{"content":""}` after text, `{}` after
 *   tool calls;
 * - each later piece of a tool call's arguments repeats `"id":""` and
 *   `"type":"function"` (the function-calling docs, qwen-plus);
 * - an answer that opens with a tool call has no role chunk of its own: the
 *   first chunk carries `content: null`, the first call's header and the
 *   role, `{"content":null,"tool_calls":[{…"index":0,"id":"call_deb0…",
 *   "type":"function"}],"role":"assistant"}` (a qwen-max stream of 2025;
 *   the function-calling docs, qwen-plus, 2026).
 */
import { describe, expect, it } from 'vitest'
import { reply } from '../../src/providers/index.js'
import { chatCompletions, useFakeProvider } from '../support/fakeChat.js'
import { dataOf, readSse } from './sse.js'

const startFake = useFakeProvider()
const chat = chatCompletions({ key: 'sk-test', model: 'qwen-plus', content: 'hi' })

interface Chunk {
  choices: { delta: Record<string, unknown>; finish_reason: string | null }[]
  usage?: unknown
  system_fingerprint?: unknown
}

describe("Qwen's compatible-mode wire format", () => {
  it('without include_usage: usage: null and system_fingerprint: null on every chunk, no usage chunk', async () => {
    const fake = await startFake({ dialect: 'qwen', reply: reply.text('我是通义') })
    const chunks = dataOf<Chunk>(await readSse(await chat(fake.baseURL, { stream: true })))
    expect(chunks.length).toBeGreaterThan(2)
    for (const c of chunks) {
      expect(c).toHaveProperty('usage', null)
      expect(c).toHaveProperty('system_fingerprint', null)
      expect(c.choices).toHaveLength(1)
    }
    expect(chunks.at(-1)!.choices[0]).toMatchObject({
      finish_reason: 'stop',
      delta: { content: '' },
    })
    expect(chunks.at(-1)!.choices[0]!.delta).toEqual({ content: '' })
  })

  it('with include_usage: the usage chunk counts the cache, zeros included, and has no fingerprint', async () => {
    const fake = await startFake({ dialect: 'qwen', reply: reply.text('一二三') })
    const chunks = dataOf<Chunk>(
      await readSse(
        await chat(fake.baseURL, { stream: true, stream_options: { include_usage: true } }),
      ),
    )
    const last = chunks.at(-1)!
    expect(last.choices).toEqual([])
    expect(last.system_fingerprint).toBeNull()
    expect(last.usage).toEqual({
      prompt_tokens: expect.any(Number),
      completion_tokens: 3,
      total_tokens: expect.any(Number),
      prompt_tokens_details: { cached_tokens: 0 },
    })
    for (const c of chunks.slice(0, -1)) expect(c.usage).toBeNull()
  })

  it('a whole answer: system_fingerprint null, prompt_tokens_details.cached_tokens 0', async () => {
    const fake = await startFake({
      dialect: 'qwen',
      reply: reply.text('你好', { usage: { inputTokens: 11, outputTokens: 2 } }),
    })
    const json = (await (await chat(fake.baseURL)).json()) as Record<string, unknown>
    expect(json['system_fingerprint']).toBeNull()
    expect(json['usage']).toEqual({
      prompt_tokens: 11,
      completion_tokens: 2,
      total_tokens: 13,
      prompt_tokens_details: { cached_tokens: 0 },
    })
  })

  it('thinking mode: the usage counts the reasoning tokens before the cache', async () => {
    const fake = await startFake({
      dialect: 'qwen',
      reply: reply.text('是', {
        thinking: '嗯，用户',
        usage: { inputTokens: 22, outputTokens: 5 },
      }),
    })
    const json = (await (await chat(fake.baseURL)).json()) as { usage: Record<string, unknown> }
    expect(Object.keys(json.usage)).toEqual([
      'prompt_tokens',
      'completion_tokens',
      'total_tokens',
      'completion_tokens_details',
      'prompt_tokens_details',
    ])
    expect(json.usage['completion_tokens_details']).toEqual({ reasoning_tokens: 4 })
  })

  it('a tool call\'s later pieces repeat id: "" and type; the finishing delta after tool calls is {}', async () => {
    const fake = await startFake({
      dialect: 'qwen',
      reply: reply.text('', {
        toolCalls: [
          { id: 'call_0bdc', name: 'get_current_weather', arguments: { location: '杭州市' } },
        ],
      }),
    })
    const chunks = dataOf<Chunk>(await readSse(await chat(fake.baseURL, { stream: true })))
    const deltas = chunks.map((c) => c.choices[0]!.delta)
    const calls = deltas.flatMap(
      (d) => (d['tool_calls'] as Record<string, unknown>[] | undefined) ?? [],
    )
    expect(calls[0]).toMatchObject({ index: 0, id: 'call_0bdc', type: 'function' })
    const pieces = calls.slice(1)
    expect(pieces.length).toBeGreaterThan(0)
    for (const piece of pieces) {
      expect(piece).toEqual({
        index: 0,
        id: '',
        type: 'function',
        function: { arguments: expect.any(String) },
      })
    }
    expect(pieces.map((p) => (p['function'] as { arguments: string }).arguments).join('')).toBe(
      '{"location":"杭州市"}',
    )
    expect(chunks.at(-1)!.choices[0]).toMatchObject({ finish_reason: 'tool_calls', delta: {} })
    expect(chunks.at(-1)!.choices[0]!.delta).toEqual({})
  })
})

describe("Qwen's answer that opens with a tool call", () => {
  it('its first chunk carries content: null, the first call and the role together', async () => {
    const fake = await startFake({
      dialect: 'qwen',
      reply: reply.text('', {
        toolCalls: [
          { id: 'call_deb0', name: 'get_current_time', arguments: {} },
          { id: 'call_k6mg', name: 'get_current_weather', arguments: { location: '杭州市' } },
        ],
      }),
    })
    const chunks = dataOf<Chunk>(await readSse(await chat(fake.baseURL, { stream: true })))
    const first = chunks[0]!.choices[0]!.delta
    expect(first).toEqual({
      content: null,
      tool_calls: [
        {
          index: 0,
          id: 'call_deb0',
          type: 'function',
          function: { name: 'get_current_time', arguments: '' },
        },
      ],
      role: 'assistant',
    })
    expect(Object.keys(first)).toEqual(['content', 'tool_calls', 'role'])
    // The role is named once; the second call's header comes alone.
    const roles = chunks.filter((c) => 'role' in (c.choices[0]?.delta ?? {}))
    expect(roles).toHaveLength(1)
    const second = chunks.find((c) =>
      JSON.stringify(c.choices[0]?.delta).includes('"id":"call_k6mg"'),
    )!
    expect(Object.keys(second.choices[0]!.delta)).toEqual(['tool_calls'])
  })

  it('after text, the role chunk stays: {"role":"assistant","content":""} first', async () => {
    const fake = await startFake({
      dialect: 'qwen',
      reply: reply.text('好的', {
        toolCalls: [
          { id: 'call_0bdc', name: 'get_current_weather', arguments: { location: '杭州市' } },
        ],
      }),
    })
    const chunks = dataOf<Chunk>(await readSse(await chat(fake.baseURL, { stream: true })))
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' })
  })
})
