import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { readSse } from './sse.js'

/**
 * Gemini thinks whether or not it is asked to show it, but sends its thought
 * summaries (`thought: true` parts) only when the request sets
 * `generationConfig.thinkingConfig.includeThoughts: true`
 * (ai.google.dev/gemini-api/docs/thinking, "Thought summaries": "You can
 * enable thought summaries by setting includeThoughts to true"; by default
 * "only the final output is returned"). The thinking is still counted
 * (`thoughtsTokenCount`). A client that never asks for them, and shows the
 * thoughts it expects to get, saw them from a fake that always sent them.
 * Seen on the wire: musistudio/claude-code-router#1275 (gemini-3-flash-preview
 * "streams a thoughtSignature in the final chunk even when no thinking content
 * (thought: true parts) was included … thinking happened internally but
 * includeThoughts was not set"); vercel/ai#12402 (gemini-3-pro-preview's
 * final chunk `"text": ""` with the `thoughtSignature`).
 */
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const call = (fake: FakeProvider, method: string, generationConfig?: object) =>
  fetch(`${fake.baseURL}/models/gemini-2.5-flash:${method}`, {
    method: 'POST',
    headers: { 'x-goog-api-key': 'k', 'content-type': 'application/json' },
    body: JSON.stringify({
      contents: [{ role: 'user', parts: [{ text: 'why?' }] }],
      ...(generationConfig === undefined ? {} : { generationConfig }),
    }),
  })

interface Part {
  text?: string
  thought?: boolean
  thoughtSignature?: string
}
interface Response {
  candidates: { content: { parts?: Part[] } }[]
  usageMetadata: { thoughtsTokenCount?: number }
}
const partsOf = (r: Response): Part[] => r.candidates[0]!.content.parts ?? []

describe('fake Gemini thought summaries', () => {
  it('sends no thought parts unless includeThoughts is set, and still counts the thinking', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: reply.text('Because.', { thinking: 'let me think about it' }),
    })
    const whole = (await (await call(fake, 'generateContent')).json()) as Response
    expect(partsOf(whole)).toEqual([{ text: 'Because.' }])
    expect(whole.usageMetadata.thoughtsTokenCount).toBeGreaterThan(0)

    const sse = await readSse(await call(fake, 'streamGenerateContent?alt=sse'))
    const chunks = sse.events.map((e) => JSON.parse(e.data) as Response)
    const streamed = chunks.flatMap(partsOf)
    expect(streamed.some((p) => p.thought === true)).toBe(false)
    expect(streamed.map((p) => p.text).join('')).toBe('Because.')
    expect(chunks.at(-1)!.usageMetadata.thoughtsTokenCount).toBeGreaterThan(0)
    // The thinking still takes its time and is billed: paced and counted as tokens.
    expect(fake.requests.at(-1)!.tokensSent).toBeGreaterThan(1)
  })

  it('sends them with thinkingConfig.includeThoughts: true', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: reply.text('Because.', { thinking: 'let me think' }),
    })
    const config = { thinkingConfig: { includeThoughts: true } }
    const whole = (await (await call(fake, 'generateContent', config)).json()) as Response
    expect(partsOf(whole)[0]).toEqual({ text: 'let me think', thought: true })
    const sse = await readSse(await call(fake, 'streamGenerateContent?alt=sse', config))
    const streamed = sse.events.flatMap((e) => partsOf(JSON.parse(e.data) as Response))
    expect(streamed.some((p) => p.thought === true)).toBe(true)
  })

  it('without them, a signed answer with no text signs an empty text part', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: reply.text('', { thinking: 'hm', signature: 'SIG' }),
    })
    const whole = (await (await call(fake, 'generateContent')).json()) as Response
    expect(partsOf(whole)).toEqual([{ text: '', thoughtSignature: 'SIG' }])
  })
})

describe('fake Gemini thought summaries, JSON-array stream', () => {
  it('a thinking answer not asked to show its thoughts is still one readable array, an error included', async () => {
    fake = await startFakeProvider({ dialect: 'gemini' })
    fake.enqueue(reply.text('Because.', { thinking: 'one two three' }))
    const ok = (await (await call(fake, 'streamGenerateContent')).json()) as Response[]
    expect(
      ok
        .flatMap(partsOf)
        .map((p) => p.text)
        .join(''),
    ).toBe('Because.')
    // An error while it thinks: nothing sent before it, so it is the first element.
    fake.enqueue({
      ...reply.text('Because.', { thinking: 'one two three' }),
      streamError: {
        afterTokens: 1,
        status: 503,
        body: { error: { code: 503, status: 'UNAVAILABLE', message: 'x' } },
      },
    })
    const cut = (await (await call(fake, 'streamGenerateContent')).json()) as unknown[]
    expect(cut).toEqual([{ error: { code: 503, status: 'UNAVAILABLE', message: 'x' } }])
  })
})
