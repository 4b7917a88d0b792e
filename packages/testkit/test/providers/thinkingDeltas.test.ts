/**
 * Which fields Qwen's and Doubao's thinking streams send as `null`, as `""`
 * or not at all, beside DeepSeek's (chunkDeltas.test.ts). A client that
 * appends `delta.content` as a string, or decides where the reasoning ends
 * by which keys a delta has (the Vercel AI SDK's openai-compatible provider
 * does), passes against a fake that differs and fails against the real API.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { dataOf, readSse } from './sse.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

interface Chunk {
  choices: { delta: Record<string, unknown>; finish_reason: string | null }[]
}

const deltas = async (base: string) => {
  const response = await fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer sk-test', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true }),
  })
  return dataOf<Chunk>(await readSse(response))
    .filter((c) => c.choices.length > 0)
    .map((c) => c.choices[0]!.delta)
}

describe('thinking-stream deltas of the compatible providers', () => {
  // Model Studio's deep-thinking docs (qwen-plus, `enable_thinking: true`,
  // compatible mode): the first chunk
  // `"delta":{"content":null,"role":"assistant","reasoning_content":""}`,
  // thinking `{"content":null,"reasoning_content":"嗯"}` (qwen3-omni-flash
  // alike), the finishing chunk `{"content":"","reasoning_content":null}`
  // with `finish_reason: "stop"`: DeepSeek's shape.
  it('qwen: the field not being generated is null, as DeepSeek sends it', async () => {
    fake = await startFakeProvider({
      dialect: 'qwen',
      reply: reply.text('我是', { thinking: '嗯' }),
    })
    expect(await deltas(fake.baseURL)).toEqual([
      { role: 'assistant', content: null, reasoning_content: '' },
      { content: null, reasoning_content: '嗯' },
      { content: '我', reasoning_content: null },
      { content: '是', reasoning_content: null },
      { content: '', reasoning_content: null },
    ])
  })

  it('qwen without thinking: no null fields', async () => {
    fake = await startFakeProvider({ dialect: 'qwen', reply: reply.text('Hi there') })
    const all = await deltas(fake.baseURL)
    expect(all.slice(1, 3)).toEqual([{ content: 'Hi' }, { content: ' there' }])
  })

  // BytePlus ModelArk's streaming docs (seed-1-6-250915): thinking chunks
  // `"delta":{"content":"","reasoning_content":"user","role":"assistant"}`;
  // volcengine's doubao chunks name `role="assistant"` on every delta.
  it('doubao: every delta names the role, and a thinking delta carries content ""', async () => {
    fake = await startFakeProvider({
      dialect: 'doubao',
      reply: reply.text('Hi there', { thinking: 'user asks' }),
    })
    const all = await deltas(fake.baseURL)
    expect(all.slice(1, 3)).toEqual([
      { content: '', reasoning_content: 'user', role: 'assistant' },
      { content: '', reasoning_content: ' asks', role: 'assistant' },
    ])
    expect(all.slice(3, 5)).toEqual([
      { content: 'Hi', role: 'assistant' },
      { content: ' there', role: 'assistant' },
    ])
    // Never null: Ark sends "" for the field not being generated.
    for (const delta of all) expect(Object.values(delta)).not.toContain(null)
  })
})
