import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { readSse } from './sse.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const call = (fake: FakeProvider, method: string) =>
  fetch(`${fake.baseURL}/models/gemini-3-pro:${method}`, {
    method: 'POST',
    headers: { 'x-goog-api-key': 'k', 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'weather?' }] }] }),
  })

interface Part {
  text?: string
  thought?: boolean
  functionCall?: { name: string }
  thoughtSignature?: string
}
const partsOf = (response: unknown): Part[] =>
  (response as { candidates: { content: { parts?: Part[] } }[] }).candidates[0]!.content.parts ?? []

describe('fake Gemini thought signatures', () => {
  it('an answer that is only a function call carries the signature on that call, streamed or not', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: reply.text('', {
        thinking: 'need tool',
        signature: 'SIG123',
        toolCalls: [
          { name: 'get_weather', arguments: { city: 'Paris' } },
          { name: 'get_time', arguments: { city: 'Paris' } },
        ],
      }),
    })
    const whole = partsOf(await (await call(fake, 'generateContent')).json())
    const sse = await readSse(await call(fake, 'streamGenerateContent?alt=sse'))
    const streamed = sse.events.flatMap((e) => partsOf(JSON.parse(e.data)))
    for (const parts of [whole, streamed]) {
      const calls = parts.filter((p) => p.functionCall !== undefined)
      // The first function call part, only it (ai.google.dev/gemini-api/docs/thought-signatures).
      expect(calls.map((p) => p.thoughtSignature)).toEqual(['SIG123', undefined])
      expect(parts.filter((p) => p.thought === true).every((p) => !('thoughtSignature' in p))).toBe(
        true,
      )
    }
  })

  it('with text, the first text part carries it in both forms', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: reply.text('It is sunny', {
        thinking: 'think',
        signature: 'SIG9',
        toolCalls: [{ name: 'log', arguments: {} }],
      }),
    })
    const whole = partsOf(await (await call(fake, 'generateContent')).json())
    const sse = await readSse(await call(fake, 'streamGenerateContent?alt=sse'))
    const streamed = sse.events.flatMap((e) => partsOf(JSON.parse(e.data)))
    for (const parts of [whole, streamed]) {
      const signed = parts.filter((p) => p.thoughtSignature !== undefined)
      expect(signed).toHaveLength(1)
      expect(signed[0]).toMatchObject({
        text: expect.stringMatching(/^It/),
        thoughtSignature: 'SIG9',
      })
    }
  })
})
