import OpenAI from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const messages = [{ role: 'user' as const, content: 'hi' }]

describe('the openai-chat route answers logprobs: true as Chat Completions does', () => {
  it('sends choices[].logprobs.content per token, with top_logprobs as asked, whole and streamed', async () => {
    fake = await startFakeProvider({ reply: reply.text('Hi there') })
    const client = new OpenAI({ baseURL: fake.baseURL, apiKey: 'sk', maxRetries: 0 })

    const whole = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages,
      logprobs: true,
      top_logprobs: 2,
    })
    const logprobs = whole.choices[0]!.logprobs
    expect(logprobs?.refusal).toBeNull()
    expect(logprobs?.content?.map((t) => t.token)).toEqual(['Hi', ' there'])
    for (const t of logprobs!.content!) {
      expect(t.logprob).toBeLessThan(0)
      expect(t.bytes).toEqual([...Buffer.from(t.token, 'utf8')])
      expect(t.top_logprobs).toHaveLength(2)
      expect(t.top_logprobs[0]!.token).toBe(t.token)
    }

    const runner = client.chat.completions.stream({
      model: 'gpt-4o-mini',
      messages,
      logprobs: true,
    })
    const deltas: string[] = []
    runner.on('logprobs.content.delta', ({ content }) =>
      deltas.push(...content.map((t) => t.token)),
    )
    const final = await runner.finalChatCompletion()
    expect(deltas).toEqual(['Hi', ' there'])
    expect(final.choices[0]!.logprobs?.content?.map((t) => t.top_logprobs)).toEqual([[], []])
  })

  it('sends logprobs: null when not asked', async () => {
    fake = await startFakeProvider({ reply: reply.text('Hi there') })
    const client = new OpenAI({ baseURL: fake.baseURL, apiKey: 'sk', maxRetries: 0 })
    const whole = await client.chat.completions.create({ model: 'gpt-4o-mini', messages })
    expect(whole.choices[0]!.logprobs).toBeNull()
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages,
      stream: true,
    })
    for await (const chunk of stream) expect(chunk.choices[0]?.logprobs ?? null).toBeNull()
  })
})
