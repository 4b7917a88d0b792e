/**
 * Anthropic's overload body, byte for byte where it matters: `error.details`
 * is present and `null`, over HTTP and inside a stream.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { anthropicErrors, type FakeProvider, startFakeProvider } from '../../src/providers/index.js'
import { readSse } from './sse.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const messages = (base: string, stream: boolean) =>
  fetch(`${base}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': 'sk-test',
      'anthropic-version': '2023-06-01',
    },
    body: JSON.stringify({
      model: 'claude',
      max_tokens: 100,
      stream,
      messages: [{ role: 'user', content: 'hi' }],
    }),
  })

// Real overloads, quoted verbatim: anthropic-sdk-go's "anthropic stream:
// received error while streaming: {"type":"error","error":{"details":null,
// "type":"overloaded_error","message":"Overloaded"},"request_id":"req_011C…"}",
// and the same body on a 529 (vercel/ai, @ai-sdk/anthropic's overloaded test).
const REAL = {
  type: 'error',
  error: { details: null, type: 'overloaded_error', message: 'Overloaded' },
  request_id: 'req_011CFakeHourglass',
}

describe('Anthropic overloaded_error', () => {
  it('a 529 body carries error.details: null', async () => {
    fake = await startFakeProvider({ dialect: 'anthropic', reply: anthropicErrors.overloaded() })
    const res = await messages(fake.url, false)
    expect(res.status).toBe(529)
    expect(await res.json()).toEqual(REAL)
  })

  it('so does the error event of a stream it breaks', async () => {
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: anthropicErrors.overloadedInStream({ afterTokens: 1 }),
    })
    const stream = await readSse(await messages(fake.url, true))
    const error = stream.events.find((e) => e.event === 'error')!
    expect(JSON.parse(error.data)).toEqual(REAL)
  })
})
