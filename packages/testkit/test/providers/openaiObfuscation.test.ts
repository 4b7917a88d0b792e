/**
 * OpenAI's stream obfuscation (since August 2025): every chunk of a Chat
 * Completions stream ends with an `"obfuscation"` field of random letters
 * and digits that evens out the chunks' sizes, sent unless the request set
 * `stream_options.include_obfuscation: false` (openai-openapi
 * `ChatCompletionStreamOptions.include_obfuscation`: "These obfuscation
 * fields are included by default"). Recorded streams (gpt-4-0613,
 * gpt-4o-2024-08-06, gpt-3.5-turbo-0125) carry it on the role chunk, each
 * content and tool-call chunk, the finishing chunk and the usage chunk,
 * after `usage` — sometimes `""`. The compatible providers send none. A
 * client that rejects unknown chunk fields, or a proxy that sizes chunks,
 * meets it against the real API only.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { dataOf, readSse } from './sse.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const stream = async (base: string, body: Record<string, unknown> = {}) => {
  const response = await fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer sk-test', 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      ...body,
    }),
  })
  return dataOf<Record<string, unknown>>(await readSse(response))
}

describe('OpenAI stream obfuscation', () => {
  it('every chunk of an openai stream ends with obfuscation (letters and digits), the usage chunk included', async () => {
    fake = await startFakeProvider({
      dialect: 'openai',
      reply: reply.text('Hello there', {
        toolCalls: [{ id: 'call_a', name: 'lookup', arguments: { q: 1 } }],
      }),
    })
    const chunks = await stream(fake.baseURL, { stream_options: { include_usage: true } })
    expect(chunks.length).toBeGreaterThan(4)
    for (const chunk of chunks) {
      expect(Object.keys(chunk).at(-1)).toBe('obfuscation')
      expect(chunk['obfuscation']).toMatch(/^[A-Za-z0-9]*$/)
    }
    // The usage chunk: `"choices":[],"usage":{…},"obfuscation":"…"`.
    expect(Object.keys(chunks.at(-1)!).slice(-3)).toEqual(['choices', 'usage', 'obfuscation'])
  })

  it('stream_options.include_obfuscation: false turns it off', async () => {
    fake = await startFakeProvider({ dialect: 'openai', reply: reply.text('Hello there') })
    const chunks = await stream(fake.baseURL, {
      stream_options: { include_usage: true, include_obfuscation: false },
    })
    expect(chunks.some((c) => 'obfuscation' in c)).toBe(false)
  })

  it('a whole (unstreamed) answer has none', async () => {
    fake = await startFakeProvider({ dialect: 'openai', reply: reply.text('Hello there') })
    const response = await fetch(`${fake.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-test', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(await response.json()).not.toHaveProperty('obfuscation')
  })

  it.each(['deepseek', 'qwen', 'doubao', 'ernie'] as const)(
    'the %s dialect sends none',
    async (dialect) => {
      fake = await startFakeProvider({ dialect, reply: reply.text('Hello there') })
      const chunks = await stream(fake.baseURL, { stream_options: { include_usage: true } })
      expect(chunks.length).toBeGreaterThan(2)
      expect(chunks.some((c) => 'obfuscation' in c)).toBe(false)
    },
  )
})
