import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { readSse } from './sse.js'

/**
 * Gemini's `usageMetadata` counts the prompt by modality too:
 * `promptTokensDetails: [{"modality": "TEXT", "tokenCount": N}]` on every
 * streamed chunk and every whole answer (raw gemini-2.5-flash `alt=sse`
 * chunks: `"promptTokenCount": 8, "candidatesTokenCount": 3,
 * "totalTokenCount": 11, "promptTokensDetails": [{"modality":
 * "TEXT","tokenCount": 8}]`; gemini-2.5-flash and gemini-3.1-flash-lite
 * answers alike), and a cache read's part by modality in
 * `cacheTokensDetails` beside `cachedContentTokenCount`
 * (ai.google.dev/api/generate-content#UsageMetadata, `ModalityTokenCount`).
 * A client that reads the per-modality counts (audio and image billing)
 * found none against the fake.
 */
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const call = (f: FakeProvider, method: string) =>
  fetch(`${f.baseURL}/models/gemini-2.5-flash:${method}`, {
    method: 'POST',
    headers: { 'x-goog-api-key': 'AIza-test', 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
  })

type Usage = Record<string, unknown>

describe('Gemini usageMetadata by modality', () => {
  it('a whole answer and every streamed chunk count the prompt by modality (TEXT: all of it)', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: reply.text('one two', { usage: { inputTokens: 8 } }),
    })
    const whole = (await (await call(fake, 'generateContent')).json()) as { usageMetadata: Usage }
    expect(whole.usageMetadata['promptTokensDetails']).toEqual([
      { modality: 'TEXT', tokenCount: 8 },
    ])
    const chunks = (await readSse(await call(fake, 'streamGenerateContent?alt=sse'))).events.map(
      (e) => (JSON.parse(e.data) as { usageMetadata: Usage }).usageMetadata,
    )
    expect(chunks.length).toBeGreaterThan(1)
    for (const usage of chunks) {
      expect(usage['promptTokensDetails']).toEqual([{ modality: 'TEXT', tokenCount: 8 }])
      expect(usage).not.toHaveProperty('cacheTokensDetails')
      expect(usage).not.toHaveProperty('candidatesTokensDetails')
    }
  })

  it('a cache read: its part by modality in cacheTokensDetails, beside cachedContentTokenCount', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: reply.text('one', { usage: { inputTokens: 100, cachedInputTokens: 60 } }),
    })
    const whole = (await (await call(fake, 'generateContent')).json()) as { usageMetadata: Usage }
    expect(whole.usageMetadata).toMatchObject({
      promptTokenCount: 100,
      cachedContentTokenCount: 60,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: 100 }],
      cacheTokensDetails: [{ modality: 'TEXT', tokenCount: 60 }],
    })
  })

  // proto3 JSON leaves every zero out, as the README says of the fake's
  // counts: a scripted usage of zeros still wrote `"promptTokenCount": 0`,
  // `"totalTokenCount": 0` and a `promptTokensDetails` entry of 0 tokens.
  it('a usage of zeros: no count of 0 and no entry of 0 tokens, streamed or not', async () => {
    fake = await startFakeProvider({
      dialect: 'gemini',
      reply: reply.text('', { usage: { inputTokens: 0, outputTokens: 0 } }),
    })
    const whole = (await (await call(fake, 'generateContent')).json()) as { usageMetadata: Usage }
    const chunks = (await readSse(await call(fake, 'streamGenerateContent?alt=sse'))).events.map(
      (e) => (JSON.parse(e.data) as { usageMetadata: Usage }).usageMetadata,
    )
    for (const usage of [whole.usageMetadata, ...chunks]) expect(usage).toEqual({})
  })
})
