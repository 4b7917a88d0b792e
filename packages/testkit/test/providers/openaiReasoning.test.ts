import { ManualClock } from '@hourglass/core'
import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { dataOf, readSse } from './sse.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const chat = (base: string, body: Record<string, unknown>) =>
  fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'o3', messages: [{ role: 'user', content: 'hi' }], ...body }),
  })

type Chunk = { choices: { delta: Record<string, unknown> }[]; usage?: Record<string, unknown> }

// Real OpenAI Chat Completions never sends its reasoning: no `reasoning_content`
// (DeepSeek's field), only `usage.completion_tokens_details.reasoning_tokens`;
// an o-series stream is silent after the role chunk while the model thinks.
describe('the openai dialect given thinking', () => {
  it('sends no reasoning_content in a JSON answer, and counts the reasoning in usage', async () => {
    fake = await startFakeProvider({ reply: reply.text('Hi', { thinking: 'secret plan' }) })
    const body = (await (await chat(fake.baseURL, {})).json()) as {
      choices: { message: Record<string, unknown> }[]
      usage: { completion_tokens: number; completion_tokens_details: Record<string, number> }
    }
    expect(body.choices[0]!.message).toEqual({
      role: 'assistant',
      content: 'Hi',
      refusal: null,
      annotations: [],
    })
    expect(body.usage.completion_tokens).toBe(3)
    expect(body.usage.completion_tokens_details.reasoning_tokens).toBe(2)
  })

  it('streams the role chunk, then nothing while it thinks, then the answer', async () => {
    fake = await startFakeProvider({ reply: reply.text('Hi', { thinking: 'secret plan' }) })
    const stream = await readSse(
      await chat(fake.baseURL, { stream: true, stream_options: { include_usage: true } }),
    )
    expect(stream.raw).not.toContain('reasoning_content')
    expect(stream.raw).not.toContain('secret')
    const chunks = dataOf<Chunk>(stream)
    expect(chunks.map((c) => c.choices[0]?.delta)).toEqual([
      { role: 'assistant', content: '', refusal: null },
      { content: 'Hi' },
      {},
      undefined, // the usage chunk: `choices: []`
    ])
    expect(chunks.at(-1)!.usage).toMatchObject({
      completion_tokens: 3,
      completion_tokens_details: { reasoning_tokens: 2 },
    })
    // Generated and billed, though nothing of it went on the wire.
    expect(fake.requests[0]).toMatchObject({ tokensSent: 3, paid: true, outcome: 'success' })
  })

  it('keeps the thinking time: the first answer token waits for every thinking token', async () => {
    const clock = new ManualClock()
    fake = await startFakeProvider({
      clock,
      reply: reply.text('Hi', {
        thinking: 'secret plan',
        firstTokenDelayMs: 1000,
        tokenDelayMs: 100,
      }),
    })
    const reading = chat(fake.baseURL, { stream: true }).then(readSse)
    const thought = async (tokens: number) => {
      await expect.poll(() => fake!.requests[0]?.tokensSent).toBe(tokens)
      await expect.poll(() => clock.pendingTimers).toBe(1)
    }
    await thought(0) // the role chunk is out; the first thinking token is pending
    clock.advance(1000)
    await thought(1)
    clock.advance(100)
    await thought(2) // both thinking tokens spent, in silence: the answer is 100 ms away
    clock.advance(100)
    const stream = await reading
    expect(dataOf<Chunk>(stream).map((c) => c.choices[0]?.delta)).toEqual([
      { role: 'assistant', content: '', refusal: null },
      { content: 'Hi' },
      {},
    ])
  })
})

describe('the OpenAI-compatible dialects that send reasoning', () => {
  for (const dialect of ['deepseek', 'qwen', 'doubao', 'ernie'] as const) {
    it(`${dialect}: reasoning_content, in the stream and the JSON answer`, async () => {
      fake = await startFakeProvider({ dialect, reply: reply.text('Hi', { thinking: 'plan' }) })
      const json = (await (await chat(fake.baseURL, {})).json()) as {
        choices: { message: Record<string, unknown> }[]
      }
      expect(json.choices[0]!.message['reasoning_content']).toBe('plan')
      const stream = await readSse(await chat(fake.baseURL, { stream: true }))
      const deltas = dataOf<Chunk>(stream).map((c) => c.choices[0]?.delta)
      // DeepSeek and Qwen name content as null beside their reasoning, Doubao
      // as "" with the role (see chunkDeltas.test.ts).
      expect(deltas[1]).toEqual(
        dialect === 'deepseek' || dialect === 'qwen'
          ? { content: null, reasoning_content: 'plan' }
          : dialect === 'doubao'
            ? { content: '', reasoning_content: 'plan', role: 'assistant' }
            : { reasoning_content: 'plan' },
      )
    })
  }
})
