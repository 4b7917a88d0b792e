import { afterEach, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { readSse } from './sse.js'

/**
 * Gemini's streamed chunks each carry the usage so far — thoughts and
 * answer generated up to that chunk (a real gemini-2.5-flash thought chunk:
 * `"promptTokenCount": 2, "totalTokenCount": 73, "thoughtsTokenCount": 71`)
 * — not the prompt's count alone, which is what the fake sent: a client
 * that summed the chunks' counts, or billed a stream cut mid-answer by
 * them, saw no output at all against it.
 */
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const usages = async (f: FakeProvider) => {
  const res = await fetch(`${f.baseURL}/models/gemini-2.5-flash:streamGenerateContent?alt=sse`, {
    method: 'POST',
    headers: { 'x-goog-api-key': 'AIza-test', 'content-type': 'application/json' },
    body: JSON.stringify({
      contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
      // Thought parts are sent only when asked for (ai.google.dev/gemini-api/docs/thinking).
      generationConfig: { thinkingConfig: { includeThoughts: true } },
    }),
  })
  return (await readSse(res)).events.map(
    (e) => (JSON.parse(e.data) as { usageMetadata: Record<string, unknown> }).usageMetadata,
  )
}

it('each chunk reports the running totals, zeros left out; the last the whole answer', async () => {
  fake = await startFakeProvider({
    dialect: 'gemini',
    reply: reply.text('one two', { thinking: 'hm well', usage: { inputTokens: 10 } }),
  })
  // Each with the prompt's counts by modality (see geminiPromptDetails.test.ts).
  const text = { promptTokensDetails: [{ modality: 'TEXT', tokenCount: 10 }] }
  expect(await usages(fake)).toEqual([
    { promptTokenCount: 10, totalTokenCount: 11, thoughtsTokenCount: 1, ...text },
    { promptTokenCount: 10, totalTokenCount: 12, thoughtsTokenCount: 2, ...text },
    {
      promptTokenCount: 10,
      candidatesTokenCount: 1,
      totalTokenCount: 13,
      thoughtsTokenCount: 2,
      ...text,
    },
    // The last text's chunk is the last: it carries the finish (no closing chunk after a STOP).
    {
      promptTokenCount: 10,
      candidatesTokenCount: 2,
      totalTokenCount: 14,
      thoughtsTokenCount: 2,
      ...text,
    },
  ])
})

it('never past the final counts a reply sets', async () => {
  fake = await startFakeProvider({
    dialect: 'gemini',
    reply: reply.text('a b c d', { usage: { inputTokens: 4, outputTokens: 2 } }),
  })
  const counts = await usages(fake)
  expect(counts.map((u) => u['candidatesTokenCount'])).toEqual([1, 2, 2, 2])
  expect(counts.at(-1)).toEqual({
    promptTokenCount: 4,
    candidatesTokenCount: 2,
    totalTokenCount: 6,
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: 4 }],
  })
})
