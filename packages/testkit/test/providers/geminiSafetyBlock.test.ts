import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { readSse } from './sse.js'

/**
 * Gemini's answer blocked by its safety filters: a candidate without
 * `content`, `finishReason: "SAFETY"` and its `safetyRatings`. The fake sent
 * the scripted text as the blocked answer's own.
 */
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const generate = (base: string, method: string) =>
  fetch(`${base}/models/gemini-2.5-flash:${method}`, {
    method: 'POST',
    headers: { 'x-goog-api-key': 'AIza-test', 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
  })

const blocked = {
  finishReason: 'SAFETY',
  index: 0,
  safetyRatings: [
    { category: 'HARM_CATEGORY_HATE_SPEECH', probability: 'NEGLIGIBLE' },
    { category: 'HARM_CATEGORY_DANGEROUS_CONTENT', probability: 'HIGH', blocked: true },
    { category: 'HARM_CATEGORY_HARASSMENT', probability: 'NEGLIGIBLE' },
    { category: 'HARM_CATEGORY_SEXUALLY_EXPLICIT', probability: 'NEGLIGIBLE' },
  ],
}

describe('fake Gemini, content_filter', () => {
  it('unstreamed: the candidate has no content, its tokens still counted', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: reply.text('Step one: the', {
        finishReason: 'content_filter',
        usage: { inputTokens: 9 },
      }),
    })
    const json = (await (await generate(fake.baseURL, 'generateContent')).json()) as {
      candidates: unknown[]
      usageMetadata: Record<string, unknown>
    }
    expect(json.candidates).toEqual([blocked])
    // Step, one, :, the: generated and billed, not sent.
    expect(json.usageMetadata).toMatchObject({ promptTokenCount: 9, candidatesTokenCount: 4 })
    expect(fake.paidGenerations).toBe(1)
  })

  it('streamed: the text before the block goes out, the last chunk is the blocked candidate', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: reply.text('Step one: the', { finishReason: 'content_filter' }),
    })
    const { events } = await readSse(await generate(fake.baseURL, 'streamGenerateContent?alt=sse'))
    const chunks = events.map((e) => JSON.parse(e.data) as { candidates: unknown[] })
    const texts = chunks
      .slice(0, -1)
      .map(
        (c) =>
          (c.candidates[0] as { content: { parts: { text: string }[] } }).content.parts[0]?.text,
      )
    expect(texts.join('')).toBe('Step one: the')
    expect(chunks.at(-1)?.candidates).toEqual([blocked])
  })
})
