/**
 * Doubao (Volcengine Ark / BytePlus ModelArk `api/v3/chat/completions`) as
 * its docs and raw streams show it, where it differs from OpenAI's:
 *
 * - a chunk's choice is `{"delta":{…},"index":0}` — no `finish_reason` key
 *   until the finishing chunk, no `logprobs` — and the finishing one
 *   `{"delta":{"content":"","role":"assistant"},"finish_reason":"stop",
 *   "index":0}` (ModelArk's streaming docs, seed-1-6-250915, a request with
 *   only `"stream": true`; raw doubao-seed-1-6-251015 streams);
 * - every chunk says `"service_tier":"default"` and `"usage":null`, asked
 *   for usage or not, and none has a `system_fingerprint`;
 * - a whole answer says `"service_tier":"default"` and counts the cache and
 *   the thinking, zeros included: `"prompt_tokens_details":{"cached_tokens":
 *   0},"completion_tokens_details":{"reasoning_tokens":0}` (doubao-seed-1-6,
 *   doubao-seed-character, doubao-seed-2-0-mini answers);
 * - no opening role chunk: an answer without thinking starts straight with
 *   its first token, `{"content":"我","role":"assistant"}`, and a thinking
 *   one with both fields empty, `{"content":"","reasoning_content":"",
 *   "role":"assistant"}` (raw doubao-seed-1-6-251015 and
 *   doubao-seed-code-preview-251028 streams; the Volcengine Ark docs'
 *   streamed example starts with `content="从前"`).
 */
import { describe, expect, it } from 'vitest'
import { reply } from '../../src/providers/index.js'
import { chatCompletions, useFakeProvider } from '../support/fakeChat.js'
import { dataOf, readSse } from './sse.js'

const startFake = useFakeProvider()
const chat = chatCompletions({ key: 'ark-test', model: 'doubao-seed-1-6-251015', content: 'hi' })

type Chunk = Record<string, unknown> & { choices: Record<string, unknown>[] }

describe("Doubao's (Ark's) wire format", () => {
  it('no finish_reason key before the finishing chunk, no logprobs, service_tier and usage: null on every chunk', async () => {
    const fake = await startFake({ dialect: 'doubao', reply: reply.text('我是豆包') })
    const chunks = dataOf<Chunk>(await readSse(await chat(fake.baseURL, { stream: true })))
    expect(chunks.length).toBeGreaterThan(2)
    for (const c of chunks) {
      expect(c['service_tier']).toBe('default')
      expect(c).toHaveProperty('usage', null)
      expect(c).not.toHaveProperty('system_fingerprint')
      expect(c.choices[0]).not.toHaveProperty('logprobs')
    }
    for (const c of chunks.slice(0, -1))
      expect(Object.keys(c.choices[0]!)).toEqual(['delta', 'index'])
    expect(chunks.at(-1)!.choices[0]).toEqual({
      delta: { content: '', role: 'assistant' },
      finish_reason: 'stop',
      index: 0,
    })
  })

  it('with include_usage: the usage chunk comes after the finishing one, counting cache and thinking', async () => {
    const fake = await startFake({ dialect: 'doubao', reply: reply.text('一二三') })
    const chunks = dataOf<Chunk>(
      await readSse(
        await chat(fake.baseURL, { stream: true, stream_options: { include_usage: true } }),
      ),
    )
    const last = chunks.at(-1)!
    expect(last.choices).toEqual([])
    expect(last['usage']).toMatchObject({
      completion_tokens: 3,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
    })
    expect(chunks.at(-2)!.choices[0]!['finish_reason']).toBe('stop')
  })

  it('a whole answer: service_tier default, no system_fingerprint, usage details with zeros', async () => {
    const fake = await startFake({
      dialect: 'doubao',
      reply: reply.text('你好', {
        thinking: '用户问好',
        usage: { inputTokens: 18, outputTokens: 6 },
      }),
    })
    const json = (await (await chat(fake.baseURL)).json()) as Record<string, unknown>
    expect(json['service_tier']).toBe('default')
    expect(json).not.toHaveProperty('system_fingerprint')
    expect(json['usage']).toEqual({
      prompt_tokens: 18,
      completion_tokens: 6,
      total_tokens: 24,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 4 },
    })
  })
})

describe("Doubao's streamed tool calls", () => {
  it('come whole, arguments included, in the finishing chunk, with no header or argument pieces before it', async () => {
    const fake = await startFake({
      dialect: 'doubao',
      reply: reply.text('', {
        toolCalls: [
          { id: 'call_pwdm', name: 'get_current_weather', arguments: { location: '北京' } },
          { id: 'call_k6mg', name: 'get_current_weather', arguments: { location: '洛阳' } },
        ],
      }),
    })
    const chunks = dataOf<Chunk>(await readSse(await chat(fake.baseURL, { stream: true })))
    const withCalls = chunks.filter(
      (c) => 'tool_calls' in ((c.choices[0]?.['delta'] as object) ?? {}),
    )
    expect(withCalls).toHaveLength(1)
    expect(withCalls[0]).toBe(chunks.at(-1))
    expect(chunks.at(-1)!.choices[0]).toEqual({
      delta: {
        content: '',
        role: 'assistant',
        tool_calls: [
          {
            function: { arguments: '{"location":"北京"}', name: 'get_current_weather' },
            id: 'call_pwdm',
            index: 0,
            type: 'function',
          },
          {
            function: { arguments: '{"location":"洛阳"}', name: 'get_current_weather' },
            id: 'call_k6mg',
            index: 1,
            type: 'function',
          },
        ],
      },
      finish_reason: 'tool_calls',
      index: 0,
    })
  })
})

describe("Doubao's first chunk", () => {
  it('without thinking: the first token, naming the role — no empty role chunk before it', async () => {
    const fake = await startFake({ dialect: 'doubao', reply: reply.text('我是豆包') })
    const chunks = dataOf<Chunk>(await readSse(await chat(fake.baseURL, { stream: true })))
    const deltas = chunks.map((c) => c.choices[0]!['delta'])
    expect(deltas).toEqual([
      { content: '我', role: 'assistant' },
      { content: '是', role: 'assistant' },
      { content: '豆', role: 'assistant' },
      { content: '包', role: 'assistant' },
      { content: '', role: 'assistant' },
    ])
  })

  it('with thinking: content and reasoning_content both empty, then the thinking', async () => {
    const fake = await startFake({
      dialect: 'doubao',
      reply: reply.text('好', { thinking: '用户' }),
    })
    const chunks = dataOf<Chunk>(await readSse(await chat(fake.baseURL, { stream: true })))
    expect(chunks.slice(0, 2).map((c) => c.choices[0]!['delta'])).toEqual([
      { content: '', reasoning_content: '', role: 'assistant' },
      { content: '', reasoning_content: '用', role: 'assistant' },
    ])
  })

  it('tool calls without thinking: the finishing chunk, carrying them, is the only one', async () => {
    const fake = await startFake({
      dialect: 'doubao',
      reply: reply.text('', {
        toolCalls: [
          { id: 'call_pwdm', name: 'get_current_weather', arguments: { location: '北京' } },
        ],
      }),
    })
    const chunks = dataOf<Chunk>(await readSse(await chat(fake.baseURL, { stream: true })))
    expect(chunks).toHaveLength(1)
    expect(chunks[0]!.choices[0]!['finish_reason']).toBe('tool_calls')
  })
})
