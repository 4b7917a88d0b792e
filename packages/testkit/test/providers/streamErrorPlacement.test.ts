import { afterEach, describe, expect, it } from 'vitest'
import {
  anthropicErrors,
  type FakeProvider,
  type ProviderDialect,
  qwenErrors,
  reply,
  startFakeProvider,
} from '../../src/providers/index.js'
import { readSse } from './sse.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const post = (fake: FakeProvider, path: string, body: object) =>
  fetch(`${fake.baseURL}${path}`, {
    method: 'POST',
    headers: { authorization: 'Bearer k', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  })

describe('a stream error scripted at or past the end of the answer', () => {
  it('Anthropic: comes after the last token and before message_delta / message_stop', async () => {
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: anthropicErrors.overloadedInStream({ text: 'Hi', afterTokens: 5 }),
    })
    const sse = await readSse(
      await post(fake, '/v1/messages', {
        model: 'm',
        max_tokens: 5,
        stream: true,
        messages: [{ role: 'user', content: 'x' }],
      }),
    )
    const names = sse.events.map((e) => e.event)
    expect(names).not.toContain('message_delta')
    expect(names).not.toContain('message_stop')
    expect(names.at(-1)).toBe('error')
    expect(sse.raw).toContain('"text":"Hi"')
    expect(fake.requests[0]).toMatchObject({ outcome: 'stream-error', tokensSent: 1 })
  })

  it.each([
    ['qwen', qwenErrors.throttlingInStream({ text: 'Hi', afterTokens: 3 })],
    ['openai', reply.text('Hi there', { streamError: { afterTokens: 9, body: { error: {} } } })],
    ['deepseek', reply.text('Hi', { streamError: { afterTokens: 1, body: { error: {} } } })],
  ] as const)(
    '%s: no finish_reason and no [DONE] before the error',
    async (dialect: ProviderDialect, script) => {
      fake = await startFakeProvider({ dialect, reply: script })
      const sse = await readSse(
        await post(fake, '/chat/completions', {
          model: 'm',
          stream: true,
          stream_options: { include_usage: true },
          messages: [{ role: 'user', content: 'x' }],
        }),
      )
      expect(sse.raw).not.toContain('[DONE]')
      expect(sse.raw).not.toMatch(/"finish_reason":"stop"/)
      expect(sse.raw).toMatch(/"content":"Hi"/)
      expect(fake.requests[0]?.outcome).toBe('stream-error')
    },
  )

  // A Gemini text answer that stops ends on its last text, which carries the
  // STOP: cut there, that text goes out as a chunk of the unfinished answer
  // (no finishReason, the running usage). It was not sent at all: `Hi`
  // with `afterTokens: 1` sent the error alone, where OpenAI's sends `Hi`.
  it.each([
    ['alt=sse', 4],
    ['alt=sse', 1],
    ['JSON array', 2],
  ] as const)(
    'Gemini (%s, afterTokens %i): as many texts as tokens, no finishReason, then the error',
    async (form, afterTokens) => {
      fake = await startFakeProvider({
        dialect: 'gemini',
        reply: reply.text('Hi there', {
          streamError: { afterTokens, body: { error: { code: 503 } } },
        }),
      })
      const res = await fetch(
        `${fake.baseURL}/models/gemini-2.5-flash:streamGenerateContent${form === 'alt=sse' ? '?alt=sse' : ''}`,
        {
          method: 'POST',
          headers: { 'x-goog-api-key': 'k' },
          body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'x' }] }] }),
        },
      )
      type Chunk = { candidates?: { content: { parts?: { text: string }[] } }[] }
      const raw = form === 'alt=sse' ? (await readSse(res)).events.map((e) => e.data) : undefined
      const chunks = (raw?.map((d) => JSON.parse(d)) ?? (await res.json())) as Chunk[]
      const text = chunks.flatMap((c) => c.candidates?.[0]?.content.parts ?? []).map((p) => p.text)
      expect(text).toEqual(['Hi', ' there'].slice(0, afterTokens))
      expect(JSON.stringify(chunks)).not.toContain('finishReason')
      expect(chunks.at(-1)).toEqual({ error: { code: 503 } })
      expect(fake.requests[0]).toMatchObject({
        outcome: 'stream-error',
        tokensSent: Math.min(afterTokens, 2),
      })
    },
  )

  it('an error within the answer still comes after exactly that many tokens', async () => {
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: anthropicErrors.overloadedInStream({ text: 'one two three four', afterTokens: 2 }),
    })
    const sse = await readSse(
      await post(fake, '/v1/messages', {
        model: 'm',
        max_tokens: 5,
        stream: true,
        messages: [{ role: 'user', content: 'x' }],
      }),
    )
    const deltas = sse.events
      .map((e) => JSON.parse(e.data) as { delta?: { text?: string } })
      .flatMap((d) => (d.delta?.text === undefined ? [] : [d.delta.text]))
    expect(deltas).toEqual(['one', ' two'])
    expect(sse.events.at(-1)?.event).toBe('error')
  })
})
