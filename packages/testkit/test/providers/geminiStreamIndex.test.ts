/**
 * Gemini numbers the candidate of an unstreamed answer, not of a streamed
 * chunk. Raw `alt=sse` chunks (gemini-1.5-pro-002 in
 * discourse/discourse-ai spec/lib/completions/endpoints/gemini_spec.rb;
 * gemini-1.5-flash in tidyverse/ellmer tests/testthat/test-provider-google.R)
 * are `{"candidates": [{"content": {"parts": [...],"role": "model"}}], …}`
 * and, last, `… "finishReason": "STOP"}]` — no `index` on any of them.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { dataOf, readSse } from './sse.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const generate = (base: string, method: string) =>
  fetch(`${base}/models/gemini-2.0-flash:${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': 'AIza-test' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
  })

describe('Gemini candidate index', () => {
  it('a streamed chunk has none, the last included; the unstreamed answer says index: 0', async () => {
    fake = await startFakeProvider({ dialect: 'gemini', reply: reply.text('Bonjour le monde') })
    const chunks = dataOf<{ candidates: Record<string, unknown>[] }>(
      await readSse(await generate(fake.baseURL, 'streamGenerateContent?alt=sse')),
    )
    expect(chunks.length).toBeGreaterThan(1)
    for (const chunk of chunks) expect(Object.keys(chunk.candidates[0]!)).not.toContain('index')
    expect(chunks.at(-1)!.candidates[0]!['finishReason']).toBe('STOP')
    const json = (await (await generate(fake.baseURL, 'generateContent')).json()) as {
      candidates: Record<string, unknown>[]
    }
    expect(json.candidates[0]!['index']).toBe(0)
  })
})
