/**
 * OpenAI's `system_fingerprint` by model: gpt-4o-mini, gpt-4.1-nano and the
 * older models name their backend configuration (`"fp_…"`) on every answer
 * and chunk, the gpt-5 family sends `null` — recorded gpt-5-2025-08-07 and
 * gpt-5-nano-2025-08-07 streams (`"service_tier":"default",
 * "system_fingerprint":null` on every chunk, the role chunk included) and
 * whole answers of 2025, and gpt-5.x streams of 2026. A client (or a
 * gateway's encoder) that reads the field as a string meets a `null` from
 * the current models only.
 */
import { describe, expect, it } from 'vitest'
import { reply } from '../../src/providers/index.js'
import { chatCompletions, useFakeProvider } from '../support/fakeChat.js'
import { dataOf, readSse } from './sse.js'

const startFake = useFakeProvider()
const ask = (model: string) => chatCompletions({ key: 'sk-test', model, content: 'hi' })

type Chunk = Record<string, unknown>

describe("OpenAI's system_fingerprint", () => {
  for (const model of ['gpt-5', 'gpt-5-nano-2025-08-07', 'gpt-5.2']) {
    it(`${model}: null on every chunk, the usage chunk included, and on a whole answer`, async () => {
      const fake = await startFake({ dialect: 'openai', reply: reply.text('Hi there') })
      const chunks = dataOf<Chunk>(
        await readSse(
          await ask(model)(fake.baseURL, {
            stream: true,
            stream_options: { include_usage: true },
          }),
        ),
      )
      expect(chunks.length).toBeGreaterThan(2)
      for (const c of chunks) expect(c).toHaveProperty('system_fingerprint', null)
      const json = (await (await ask(model)(fake.baseURL)).json()) as Chunk
      expect(json).toHaveProperty('system_fingerprint', null)
    })
  }

  it('gpt-4o-mini: a "fp_…" string on every chunk and on a whole answer', async () => {
    const fake = await startFake({ dialect: 'openai', reply: reply.text('Hi there') })
    const chat = ask('gpt-4o-mini')
    const chunks = dataOf<Chunk>(await readSse(await chat(fake.baseURL, { stream: true })))
    for (const c of chunks) expect(c['system_fingerprint']).toMatch(/^fp_/)
    const json = (await (await chat(fake.baseURL)).json()) as Chunk
    expect(json['system_fingerprint']).toMatch(/^fp_/)
  })

  it('the model a reply names decides, not the one asked for', async () => {
    const fake = await startFake({
      dialect: 'openai',
      reply: reply.text('Hi', { model: 'gpt-5-mini-2025-08-07' }),
    })
    const json = (await (await ask('gpt-4o-mini')(fake.baseURL)).json()) as Chunk
    expect(json['model']).toBe('gpt-5-mini-2025-08-07')
    expect(json).toHaveProperty('system_fingerprint', null)
  })
})
