import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { readSse } from './sse.js'

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

// Past 2^53: parsed into a JavaScript number it would come out 12345678901234567000.
const EXACT = '{"order_id":12345678901234567890, "tag": "x"}'
const toolCalls = [{ name: 'lookup', arguments: undefined, argumentsJson: EXACT }]

const anthropic = (fake: FakeProvider, stream: boolean) =>
  fetch(`${fake.baseURL}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({
      model: 'claude-sonnet-4-5',
      max_tokens: 50,
      stream,
      messages: [{ role: 'user', content: 'look it up' }],
    }),
  })
const gemini = (fake: FakeProvider, method: string) =>
  fetch(`${fake.baseURL}/models/gemini-2.5-flash:${method}`, {
    method: 'POST',
    headers: { 'x-goog-api-key': 'k' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'look it up' }] }] }),
  })

describe('argumentsJson is sent exactly as written', () => {
  it('Anthropic, not streamed: `input` is the text itself', async () => {
    fake = await startFakeProvider({ dialect: 'anthropic', reply: reply.text('', { toolCalls }) })
    const text = await (await anthropic(fake, false)).text()
    expect(text).toContain(`"input":${EXACT}`)
    expect(JSON.parse(text)).toMatchObject({ content: [{ type: 'tool_use', input: { tag: 'x' } }] })
  })

  it('Anthropic, streamed: the partial_json pieces join into the text', async () => {
    fake = await startFakeProvider({ dialect: 'anthropic', reply: reply.text('', { toolCalls }) })
    const sse = await readSse(await anthropic(fake, true))
    const joined = sse.events
      .map((e) => JSON.parse(e.data) as { delta?: { partial_json?: string } })
      .map((d) => d.delta?.partial_json ?? '')
      .join('')
    expect(joined).toBe(EXACT)
  })

  it.each([['generateContent'], ['streamGenerateContent?alt=sse'], ['streamGenerateContent']])(
    'Gemini %s: `args` is the text itself',
    async (method) => {
      fake = await startFakeProvider({ dialect: 'gemini', reply: reply.text('', { toolCalls }) })
      const text = await (await gemini(fake, method)).text()
      expect(text).toContain(`"args":${EXACT}`)
    },
  )

  it.each([['generateContent'], ['streamGenerateContent?alt=sse'], ['streamGenerateContent']])(
    'Gemini %s: a call without arguments has no `args` at all, as Gemini sends it',
    async (method) => {
      // `FunctionCall.args` is an optional Struct, left out when the model sets none.
      fake = await startFakeProvider({
        dialect: 'gemini',
        reply: reply.text('', {
          toolCalls: [
            { name: 'beep', arguments: {} },
            { name: 'beep', arguments: undefined, argumentsJson: '{}' },
            { name: 'log', arguments: { level: 1 } },
          ],
        }),
      })
      const text = await (await gemini(fake, method)).text()
      const calls = [...text.matchAll(/"functionCall":(\{[^{}]*(\{[^{}]*\})?[^{}]*\})/g)].map((m) =>
        JSON.parse(m[1] ?? ''),
      )
      expect(calls).toEqual([
        { name: 'beep' },
        { name: 'beep' },
        { name: 'log', args: { level: 1 } },
      ])
    },
  )

  it('malformed text is sent as written where arguments travel as text (OpenAI `arguments`)', async () => {
    fake = await startFakeProvider({
      reply: reply.text('', { toolCalls: [{ name: 'f', arguments: {}, argumentsJson: '{"a":' }] }),
    })
    const res = await fetch(`${fake.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer k' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    })
    expect(await res.json()).toMatchObject({
      choices: [{ message: { tool_calls: [{ function: { arguments: '{"a":' } }] } }],
    })
  })

  it('where they are a JSON object in the body, malformed text is refused with a 500 that says why', async () => {
    const bad = reply.text('', {
      toolCalls: [{ name: 'f', arguments: {}, argumentsJson: '{"a":' }],
    })
    fake = await startFakeProvider({ dialect: 'anthropic', reply: bad })
    const res = await anthropic(fake, false)
    expect(res.status).toBe(500)
    const { error } = (await res.json()) as { error: { code: string; message: string } }
    expect(error.code).toBe('reply_failed')
    expect(error.message).toMatch(/argumentsJson "\{\\"a\\":" is not a JSON object/)
    expect(error.message).toMatch(/tool_use `input`/)
  })
})
