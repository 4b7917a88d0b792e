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
    body: JSON.stringify({
      contents: [{ role: 'user', parts: [{ text: 'weather?' }] }],
      // Thought parts are sent only when asked for (ai.google.dev/gemini-api/docs/thinking).
      generationConfig: { thinkingConfig: { includeThoughts: true } },
    }),
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

  it('with text before the calls, the first function call carries it, not the text', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: reply.text('It is sunny', {
        thinking: 'think',
        signature: 'SIG9',
        toolCalls: [
          { name: 'log', arguments: {} },
          { name: 'notify', arguments: {} },
        ],
      }),
    })
    const whole = partsOf(await (await call(fake, 'generateContent')).json())
    const sse = await readSse(await call(fake, 'streamGenerateContent?alt=sse'))
    const streamed = sse.events.flatMap((e) => partsOf(JSON.parse(e.data)))
    for (const parts of [whole, streamed]) {
      // Gemini 3 signs the first functionCall part of a response with calls
      // (ai.google.dev/gemini-api/docs/thought-signatures); it used to be the text.
      const signed = parts.filter((p) => p.thoughtSignature !== undefined)
      expect(signed).toEqual([
        // No `args`: a call without arguments has none.
        { functionCall: { name: 'log' }, thoughtSignature: 'SIG9' },
      ])
    }
  })

  it('without function calls, the last part carries it: the last text chunk when streamed', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: reply.text('It is sunny today', { thinking: 'think', signature: 'SIG7' }),
    })
    const whole = partsOf(await (await call(fake, 'generateContent')).json())
    // "Model responses without a function call will return a thought
    // signature inside the last part returned by the model."
    expect(whole).toEqual([
      { text: 'think', thought: true },
      { text: 'It is sunny today', thoughtSignature: 'SIG7' },
    ])
    const sse = await readSse(await call(fake, 'streamGenerateContent?alt=sse'))
    const streamed = sse.events.flatMap((e) => partsOf(JSON.parse(e.data)))
    expect(streamed.at(-1)).toEqual({ text: ' today', thoughtSignature: 'SIG7' })
    expect(streamed.filter((p) => p.thoughtSignature !== undefined)).toHaveLength(1)
  })

  it('an answer that is only thoughts signs its last thought, rather than dropping the signature', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: reply.text('', { thinking: 'just thinking', signature: 'SIG5' }),
    })
    const whole = partsOf(await (await call(fake, 'generateContent')).json())
    expect(whole).toEqual([{ text: 'just thinking', thought: true, thoughtSignature: 'SIG5' }])
    const sse = await readSse(await call(fake, 'streamGenerateContent?alt=sse'))
    const streamed = sse.events.flatMap((e) => partsOf(JSON.parse(e.data)))
    expect(streamed.map((p) => p.thoughtSignature)).toEqual([undefined, 'SIG5'])
  })
})
