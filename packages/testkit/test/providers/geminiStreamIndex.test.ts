/**
 * Gemini numbers every candidate, streamed or not: raw `alt=sse` chunks
 * from gemini-2.5-flash are `{"candidates": [{"content": {"parts": [...],
 * "role": "model"},"index": 0}], …}` and, last, `… "finishReason":
 * "STOP","index": 0}]` (as are gemini-2.5-flash-lite, gemini-3-flash-preview
 * and gemini-3.1-pro-preview chunks). Only gemini-1.5 and 2.0 streams left
 * the `index` out; the fake follows the current models.
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
  fetch(`${base}/models/gemini-2.5-flash:${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': 'AIza-test' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
  })

describe('Gemini candidate index', () => {
  it('every streamed chunk says index: 0, the last after its finishReason, as the unstreamed answer does', async () => {
    fake = await startFakeProvider({ dialect: 'gemini', reply: reply.text('Bonjour le monde') })
    const chunks = dataOf<{ candidates: Record<string, unknown>[] }>(
      await readSse(await generate(fake.baseURL, 'streamGenerateContent?alt=sse')),
    )
    expect(chunks.length).toBeGreaterThan(1)
    for (const chunk of chunks) expect(chunk.candidates[0]!['index']).toBe(0)
    expect(Object.keys(chunks[0]!.candidates[0]!)).toEqual(['content', 'index'])
    expect(Object.keys(chunks.at(-1)!.candidates[0]!)).toEqual(['content', 'finishReason', 'index'])
    expect(chunks.at(-1)!.candidates[0]!['finishReason']).toBe('STOP')
    const json = (await (await generate(fake.baseURL, 'generateContent')).json()) as {
      candidates: Record<string, unknown>[]
    }
    expect(Object.keys(json.candidates[0]!)).toEqual(['content', 'finishReason', 'index'])
    expect(json.candidates[0]!['index']).toBe(0)
  })

  it('the JSON-array stream (no alt=sse) numbers its candidates too', async () => {
    fake = await startFakeProvider({ dialect: 'gemini', reply: reply.text('Bonjour le monde') })
    const elements = (await (await generate(fake.baseURL, 'streamGenerateContent')).json()) as {
      candidates: Record<string, unknown>[]
    }[]
    expect(elements.length).toBeGreaterThan(1)
    for (const element of elements) expect(element.candidates[0]!['index']).toBe(0)
  })
})
