import { type FakeProvider, reply, startFakeProvider } from '@hourglass/testkit'
import { afterEach, expect, it } from 'vitest'
import { dialects } from '../../src/dialects/dialects.js'

/**
 * The Gemini dialect reads `streamGenerateContent` without `alt=sse` (what a
 * stream request gets through a proxy that drops the query) as one answer.
 * The fake used to answer it with one element holding the whole answer;
 * it now sends the stream's chunks as the array's elements, as Gemini does.
 * Read both ways, the answer must be the one `generateContent` gives.
 */
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const gemini = dialects.gemini

const call = async (f: FakeProvider, method: string) => {
  const res = await fetch(`${f.baseURL}/models/gemini-2.5-flash:${method}`, {
    method: 'POST',
    headers: { 'x-goog-api-key': 'AIza-test', 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
  })
  return { status: res.status, body: await res.text() }
}

it.each([
  ['text', reply.text('Bonjour le monde, ça va ?', { thinking: 'let me think', signature: 'sig' })],
  [
    'tool calls',
    reply.text('Calling them.', {
      signature: 'sig',
      toolCalls: [
        { name: 'f', arguments: { a: 1 } },
        { name: 'g', arguments: {} },
      ],
    }),
  ],
])('the JSON-array chunks (%s) read as the whole answer', async (_name, scripted) => {
  fake = await startFakeProvider({ dialect: 'gemini', reply: scripted })
  const whole = gemini.parseResponse((await call(fake, 'generateContent')).body)
  const array = await call(fake, 'streamGenerateContent')
  expect((JSON.parse(array.body) as unknown[]).length).toBeGreaterThan(1)
  const joined = gemini.parseResponse(array.body)
  // Gemini signs the last part of an answer without function calls: a stream
  // its last chunk, so the streamed text comes in two blocks around the
  // signature (kept on the part it came on), where the whole answer's one
  // part is signed. Compared as the text joined and the signatures in order.
  type Block = (typeof whole)['content'][number]
  const signatureOnly = (b: Block) => b.type === 'thinking' && b.thinking === '' && !!b.signature
  const comparable = (r: typeof whole) => ({
    ...r,
    id: undefined,
    content: r.content
      .filter((b) => !signatureOnly(b))
      // Generated per answer: compared by name and arguments.
      .map((b): Block => (b.type === 'tool_call' ? { ...b, id: '' } : b))
      .reduce<Block[]>((blocks, b) => {
        const last = blocks.at(-1)
        if (b.type === 'text' && last?.type === 'text') {
          blocks[blocks.length - 1] = { ...last, text: last.text + b.text }
        } else blocks.push(b)
        return blocks
      }, []),
    signatures: r.content.flatMap((b) =>
      b.type === 'thinking' && b.signature ? [b.signature] : [],
    ),
  })
  expect(comparable(joined)).toEqual(comparable(whole))
})

it('an error element after some chunks is the provider’s error, with the usage billed so far', async () => {
  const body = { error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' } }
  fake = await startFakeProvider({
    dialect: 'gemini',
    reply: reply.text('one two three', { streamError: { afterTokens: 2, body } }),
  })
  const { status, body: text } = await call(fake, 'streamGenerateContent')
  expect(status).toBe(200)
  expect(gemini.normalizeError({ status, body: text })).toMatchObject({
    kind: 'overloaded',
    status: 200,
  })
})
