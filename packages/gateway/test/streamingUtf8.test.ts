import { reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { oneProviderGateway, readRaw } from './support/oneProviderGateway.js'

const TEXT = '你好，世界！🌏 deadlines 不是 timeouts 👩‍💻🚀 — 中文与 emoji 混排，一字不差。'

// Multi-byte text cut across upstream writes, through every streaming
// dialect: nothing here comes at a time, so it runs beside other files (the
// deadline cases are in streaming.test.ts, in the timing project).
describe('SSE through the gateway: characters split across writes', () => {
  const gw = oneProviderGateway()
  const one = gw.one
  afterEach(() => gw.close())

  for (const dialect of ['openai', 'anthropic', 'gemini', 'qwen', 'ernie'] as const) {
    it(`Chinese and emoji split across upstream writes arrive byte-identical with no U+FFFD (${dialect})`, async () => {
      const fake = await one(dialect)
      // Every frame written in 1–3 byte pieces: multi-byte characters are cut across TCP writes.
      fake.enqueue(reply.text(TEXT, { splitBytes: 1 }), reply.text(TEXT, { splitBytes: 3 }))
      const stream = await gw.harness.client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: '说点什么' }],
        stream: true,
      })
      let text = ''
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
      expect(Buffer.from(text).equals(Buffer.from(TEXT))).toBe(true)
      expect(text).not.toContain('\uFFFD')

      const res = await fetch(`${gw.harness.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'm',
          stream: true,
          messages: [{ role: 'user', content: 'again' }],
        }),
      })
      const raw = await readRaw(res)
      expect(raw.text).not.toContain('\uFFFD')
      expect(raw.text.endsWith('data: [DONE]\n\n')).toBe(true)
      const joined = raw.text
        .split('\n\n')
        .filter((e) => e.startsWith('data: {'))
        .map((e) => JSON.parse(e.slice(6)).choices[0]?.delta.content ?? '')
        .join('')
      expect(joined).toBe(TEXT)
      expect(fake.requests.every((r) => r.outcome === 'success')).toBe(true)
    })
  }
})
