/**
 * The exact `delta` objects of streamed chat-completion chunks: which fields
 * a real provider sends as `null`, which it leaves out, and which chunk
 * carries the role. A client that reads `delta.content` as a string (`+=`)
 * or looks for the role only in a content chunk passes against a fake that
 * differs and fails against the real API. Each case cites the stream it was
 * checked against.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { dataOf, readSse } from './sse.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const chat = (base: string, body: Record<string, unknown> = {}) =>
  fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer sk-test', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...body }),
  })

interface Chunk {
  choices: { delta: Record<string, unknown>; finish_reason: string | null }[]
  usage?: Record<string, unknown> | null
}

const deltas = async (base: string, body: Record<string, unknown> = {}) =>
  dataOf<Chunk>(await readSse(await chat(base, { stream: true, ...body })))
    .filter((c) => c.choices.length > 0)
    .map((c) => c.choices[0]!.delta)

describe('OpenAI chat-completion chunk deltas', () => {
  // Recorded gpt-4o-mini streams in dotnet/extensions
  // (test/Libraries/Microsoft.Extensions.AI.OpenAI.Tests/OpenAIChatClientTests.cs):
  // the first chunk is `"delta":{"role":"assistant","content":"","refusal":null}`;
  // openai-node's `ChatCompletionChunk.Choice.Delta.refusal?: string | null`.
  it('the role chunk carries refusal: null', async () => {
    fake = await startFakeProvider({ dialect: 'openai', reply: reply.text('Hello there') })
    const [first, second] = await deltas(fake.baseURL)
    expect(first).toEqual({ role: 'assistant', content: '', refusal: null })
    expect(second).toEqual({ content: 'Hello' })
  })

  // The same file's recorded tool-call stream (gpt-4o-mini-2024-07-18,
  // chatcmpl-ADymNiWWeqCJqHNFXiI1QtRcLuXcl), and every raw OpenAI tool-call
  // capture found: an answer that opens with a tool call has no separate
  // role chunk — the first chunk is
  // `{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_…",
  // "type":"function","function":{"name":"GetPersonAge","arguments":""}}],"refusal":null}`,
  // then `{"tool_calls":[{"index":0,"function":{"arguments":"{\""}}]}` pieces.
  it('an answer that opens with a tool call: role, content: null and the call header in one chunk', async () => {
    fake = await startFakeProvider({
      dialect: 'openai',
      reply: reply.text('', {
        toolCalls: [
          { id: 'call_a', name: 'lookup', arguments: { q: 1 } },
          { id: 'call_b', name: 'other', arguments: {} },
        ],
      }),
    })
    const all = await deltas(fake.baseURL)
    expect(all[0]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        { index: 0, id: 'call_a', type: 'function', function: { name: 'lookup', arguments: '' } },
      ],
      refusal: null,
    })
    // No other chunk names the role; the second call still opens with its own header.
    expect(all.slice(1).some((d) => 'role' in d)).toBe(false)
    expect(all).toContainEqual({
      tool_calls: [
        { index: 1, id: 'call_b', type: 'function', function: { name: 'other', arguments: '' } },
      ],
    })
    expect(all.at(-1)).toEqual({})
  })

  it('text before the tool call keeps the role chunk apart, as recorded text streams do', async () => {
    fake = await startFakeProvider({
      dialect: 'openai',
      reply: reply.text('Looking', {
        toolCalls: [{ id: 'call_a', name: 'lookup', arguments: {} }],
      }),
    })
    const all = await deltas(fake.baseURL)
    expect(all[0]).toEqual({ role: 'assistant', content: '', refusal: null })
    expect(all[1]).toEqual({ content: 'Looking' })
    expect(all[2]).toEqual({
      tool_calls: [
        { index: 0, id: 'call_a', type: 'function', function: { name: 'lookup', arguments: '' } },
      ],
    })
  })
})

describe('DeepSeek thinking-mode chunk deltas', () => {
  // A raw deepseek-reasoner chunk (tmc/langchaingo,
  // llms/openai/internal/openaiclient/chat_test.go):
  // `"delta":{"content":null,"reasoning_content":"Okay"}`. A raw
  // deepseek-v4-flash stream (system_fingerprint fp_8b330d02d0_prod0820…,
  // 2026): reasoning chunks `{"content":null,"reasoning_content":"用户"}`,
  // answer chunks `{"content":"好的","reasoning_content":null}`, the finishing
  // chunk `{"content":"","reasoning_content":null}` with usage
  // `completion_tokens_details: {reasoning_tokens: 31}`. The first chunk:
  // `{"role":"assistant","content":null,"reasoning_content":""}`
  // (langchain-ai/langchain#31065: "deepseek-r1 always returns an empty
  // string reasoning_content to the first chunk when thinking, and sets
  // reasoning_content to None when thinking is over").
  it('reasoning chunks say content: null, answer chunks reasoning_content: null', async () => {
    fake = await startFakeProvider({
      dialect: 'deepseek',
      reply: reply.text('答案是四', { thinking: '二加二' }),
    })
    const all = await deltas(fake.baseURL)
    expect(all[0]).toEqual({ role: 'assistant', content: null, reasoning_content: '' })
    expect(all.slice(1, 4)).toEqual([
      { content: null, reasoning_content: '二' },
      { content: null, reasoning_content: '加' },
      { content: null, reasoning_content: '二' },
    ])
    expect(all.slice(4, 8)).toEqual(
      ['答', '案', '是', '四'].map((t) => ({ content: t, reasoning_content: null })),
    )
    expect(all.at(-1)).toEqual({ content: '', reasoning_content: null })
  })

  it('its usage counts the reasoning tokens in completion_tokens_details', async () => {
    fake = await startFakeProvider({
      dialect: 'deepseek',
      reply: reply.text('答案是四', { thinking: '二加二' }),
    })
    const chunks = dataOf<Chunk>(await readSse(await chat(fake.baseURL, { stream: true })))
    expect(chunks.at(-1)!.usage).toMatchObject({
      completion_tokens: 7,
      completion_tokens_details: { reasoning_tokens: 3 },
    })
    const json = (await (await chat(fake.baseURL)).json()) as { usage: Record<string, unknown> }
    expect(json.usage).toMatchObject({ completion_tokens_details: { reasoning_tokens: 3 } })
  })

  // deepseek-chat streams (fp_8802369eaa_prod0623…, fp_3a5770e1b4_prod0225):
  // `{"role":"assistant","content":""}`, `{"content":"你好"}`, …, and the
  // finishing chunk `"delta":{"content":""},"logprobs":null,"finish_reason":"stop"`.
  it('without thinking (deepseek-chat): no null fields, and the finishing delta says content: ""', async () => {
    fake = await startFakeProvider({ dialect: 'deepseek', reply: reply.text('Hi there') })
    const all = await deltas(fake.baseURL)
    expect(all).toEqual([
      { role: 'assistant', content: '' },
      { content: 'Hi' },
      { content: ' there' },
      { content: '' },
    ])
  })
})

describe('OpenAI service_tier and annotations', () => {
  // Raw OpenAI streams of 2025 carry `"service_tier":"default"` on every chunk
  // of a request that named no tier (gpt-4o-mini-2024-07-18 and
  // gpt-4.1-nano-2025-04-14 captures, e.g. chatcmpl-Bx5kRNsKBfYXdH2IeSETLB6DQk1kC);
  // openai-node `ChatCompletion.service_tier` / `ChatCompletionChunk.service_tier`:
  // the processing mode actually used. The JSON message lists its citations,
  // none included: `"annotations": []` (openai-node
  // `ChatCompletionMessage.annotations`; raw gpt-4o-2024-08-06 answers).
  it('names the tier that served the answer, in JSON and on every chunk', async () => {
    fake = await startFakeProvider({ dialect: 'openai', reply: reply.text('Hi') })
    const json = (await (await chat(fake.baseURL)).json()) as Record<string, unknown> & {
      choices: { message: Record<string, unknown> }[]
    }
    expect(json['service_tier']).toBe('default')
    expect(json.choices[0]!.message).toEqual({
      role: 'assistant',
      content: 'Hi',
      refusal: null,
      annotations: [],
    })
    const chunks = dataOf<Record<string, unknown>>(
      await readSse(
        await chat(fake.baseURL, {
          stream: true,
          service_tier: 'priority',
          stream_options: { include_usage: true },
        }),
      ),
    )
    expect(chunks.map((c) => c['service_tier'])).toEqual(chunks.map(() => 'priority'))
    const auto = (await (await chat(fake.baseURL, { service_tier: 'auto' })).json()) as {
      service_tier: string
    }
    expect(auto.service_tier).toBe('default')
  })

  it('the compatible dialects send neither', async () => {
    fake = await startFakeProvider({ dialect: 'deepseek', reply: reply.text('Hi') })
    const json = (await (await chat(fake.baseURL)).json()) as Record<string, unknown> & {
      choices: { message: Record<string, unknown> }[]
    }
    expect('service_tier' in json).toBe(false)
    expect('annotations' in json.choices[0]!.message).toBe(false)
  })
})
