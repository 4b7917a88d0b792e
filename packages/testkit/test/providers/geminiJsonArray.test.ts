import { afterEach, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { readSse } from './sse.js'

/**
 * `streamGenerateContent` without `alt=sse` answers the stream's chunks as
 * the elements of one JSON array, written as they are generated. The fake
 * sent a single element holding the whole answer: a client that joins the
 * elements (text over several, usage only in the last, the signature on
 * one of them) passed against it without joining anything.
 */
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const call = (f: FakeProvider, query = '') =>
  fetch(`${f.baseURL}/models/gemini-2.5-flash:streamGenerateContent${query}`, {
    method: 'POST',
    headers: { 'x-goog-api-key': 'AIza-test', 'content-type': 'application/json' },
    body: JSON.stringify({
      contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
      // Thought parts are sent only when asked for (ai.google.dev/gemini-api/docs/thinking).
      generationConfig: { thinkingConfig: { includeThoughts: true } },
    }),
  })

it('is one JSON array of the chunks the alt=sse stream sends, element for element', async () => {
  fake = await startFakeProvider({
    dialect: 'gemini',
    reply: reply.text('Bonjour le monde', { thinking: 'hm', signature: 'sig' }),
  })
  const res = await call(fake)
  expect(res.headers.get('content-type')).toBe('application/json; charset=UTF-8')
  const array = (await res.json()) as Record<string, unknown>[]
  const sse = await readSse(await call(fake, '?alt=sse'))
  const chunks = sse.events.map((e) => JSON.parse(e.data) as Record<string, unknown>)
  const strip = (c: Record<string, unknown>) => ({ ...c, responseId: undefined })
  expect(array.map(strip)).toEqual(chunks.map(strip))
  // thought, three text chunks, the last with finishReason and usage (a STOP has no closing chunk).
  expect(array).toHaveLength(4)
  expect(array[0]).toMatchObject({
    candidates: [{ content: { parts: [{ text: 'hm', thought: true }] } }],
  })
  // No function call: the last text chunk carries the signature, as in the alt=sse stream.
  expect(array[3]).toMatchObject({
    candidates: [{ content: { parts: [{ text: ' monde', thoughtSignature: 'sig' }] } }],
  })
  expect(array.at(-1)).toMatchObject({
    candidates: [{ finishReason: 'STOP' }],
    usageMetadata: { candidatesTokenCount: 3, thoughtsTokenCount: 1 },
  })
  expect(fake.requests[0]).toMatchObject({ stream: false, outcome: 'success', tokensSent: 4 })
})

it('a stream error is the last element, after the chunks generated so far; at 0 tokens the only one', async () => {
  const body = { error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } }
  fake = await startFakeProvider({ dialect: 'gemini' })
  fake.enqueue(
    reply.text('one two three', { streamError: { afterTokens: 2, body } }),
    reply.text('one two three', { streamError: { afterTokens: 0, body } }),
  )
  const broken = (await (await call(fake)).json()) as unknown[]
  expect(broken).toHaveLength(3)
  expect(broken[2]).toEqual(body)
  expect(await (await call(fake)).json()).toEqual([body])
  expect(fake.requests.map((r) => r.outcome)).toEqual(['stream-error', 'stream-error'])
})

it('paces its elements as a stream, with no SSE keep-alive comment inside the JSON', async () => {
  fake = await startFakeProvider({
    dialect: 'gemini',
    reply: reply.text('a b', { firstTokenDelayMs: 30, keepAliveEveryMs: 5 }),
  })
  const text = await (await call(fake)).text()
  expect(text).not.toContain('keep-alive')
  expect(JSON.parse(text)).toHaveLength(2)
})
