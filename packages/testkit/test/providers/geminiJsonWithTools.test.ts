import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'

/**
 * Gemini before 3 refuses a request that declares functions and asks for
 * JSON (`responseMimeType: "application/json"`): 400 INVALID_ARGUMENT
 * "Function calling with a response mime type: 'application/json' is
 * unsupported". The fake answered it 200.
 */
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const TOOLS = [{ functionDeclarations: [{ name: 'lookup', description: 'd' }] }]

const ask = (extra: Record<string, unknown> = {}) => ({
  contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
  generationConfig: { responseMimeType: 'application/json' },
  tools: TOOLS,
  ...extra,
})

async function post(model: string, body: unknown, method = 'generateContent') {
  const res = await fetch(`${fake?.baseURL}/models/${model}:${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as { error?: Record<string, unknown> } }
}

describe('Gemini: function calling with a JSON response', () => {
  it('before Gemini 3: 400 INVALID_ARGUMENT in its words, nothing generated', async () => {
    fake = await startFakeProvider({ dialect: 'gemini', reply: reply.text('{"a":1}') })
    const refused = await post('gemini-2.5-flash', ask())
    expect(refused.status).toBe(400)
    expect(refused.body.error).toEqual({
      code: 400,
      message: "Function calling with a response mime type: 'application/json' is unsupported",
      status: 'INVALID_ARGUMENT',
    })
    expect(fake.requests[0]).toMatchObject({ outcome: 'error', paid: false, tokensSent: 0 })
    // snake_case, as the REST API also takes it; Gemini 2.0 too.
    const snake = await post('gemini-2.0-flash', {
      contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
      generation_config: { response_mime_type: 'application/json' },
      tools: [{ function_declarations: [{ name: 'lookup' }] }],
    })
    expect(snake.status).toBe(400)
  })

  it('Gemini 3, function calling off (mode NONE), no tools, or no JSON: answered', async () => {
    fake = await startFakeProvider({ dialect: 'gemini', reply: reply.text('{"a":1}') })
    expect((await post('gemini-3-flash-preview', ask())).status).toBe(200)
    const none = ask({ toolConfig: { functionCallingConfig: { mode: 'NONE' } } })
    expect((await post('gemini-2.5-flash', none)).status).toBe(200)
    expect((await post('gemini-2.5-flash', ask({ tools: undefined }))).status).toBe(200)
    expect((await post('gemini-2.5-flash', ask({ generationConfig: {} }))).status).toBe(200)
  })
})
