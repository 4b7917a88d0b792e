import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'

/** An error answer's body, OpenAI's or Anthropic's shape (both carry `error`). */
interface ErrorBody {
  error: { message?: string; type?: string; param?: unknown; code?: unknown }
}

/**
 * A history the APIs cannot read — no message at all, or a Gemini role but
 * `user` and `model` — is refused before anything is generated. The fakes
 * answered 200, so a client that cleared its history, filtered every message
 * out, or sent OpenAI's `assistant` role to Gemini passed here and failed
 * against the API.
 */

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${fake?.baseURL}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as ErrorBody }
}

describe('an empty or unreadable history', () => {
  it('openai: messages: [] is the empty_array 400', async () => {
    fake = await startFakeProvider({ dialect: 'openai', reply: reply.text('hi') })
    const { status, body } = await post('/chat/completions', { model: 'gpt-4o-mini', messages: [] })
    expect(status).toBe(400)
    expect(body.error).toEqual({
      message:
        "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      type: 'invalid_request_error',
      param: 'messages',
      code: 'empty_array',
    })
  })

  it('anthropic: messages: [] is "at least one message is required"', async () => {
    fake = await startFakeProvider({ dialect: 'anthropic', reply: reply.text('hi') })
    const { status, body } = await post(
      '/v1/messages',
      { model: 'claude-sonnet-4-5', max_tokens: 16, messages: [] },
      { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
    )
    expect(status).toBe(400)
    expect(body.error.type).toBe('invalid_request_error')
    expect(body.error.message).toBe('messages: at least one message is required')
  })

  it("gemini: a role but user and model is 'Please use a valid role'", async () => {
    fake = await startFakeProvider({ dialect: 'gemini', reply: reply.text('hi') })
    const path = '/models/gemini-2.5-flash:generateContent'
    const refused = await post(path, {
      contents: [
        { role: 'user', parts: [{ text: 'hi' }] },
        { role: 'assistant', parts: [{ text: 'hello' }] },
        { role: 'user', parts: [{ text: 'bye' }] },
      ],
    })
    expect(refused.status).toBe(400)
    expect(refused.body.error).toEqual({
      code: 400,
      message: 'Please use a valid role: user, model.',
      status: 'INVALID_ARGUMENT',
    })
    const answered = await post(path, {
      contents: [
        { parts: [{ text: 'hi' }] },
        { role: 'model', parts: [{ text: 'hello' }] },
        { role: 'user', parts: [{ text: 'bye' }] },
      ],
    })
    expect(answered.status).toBe(200)
  })
})

describe('a role the Messages API does not take', () => {
  const headers = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }
  const messages = (body: Record<string, unknown>) =>
    post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 16, ...body }, headers)

  it('anthropic: a system message (OpenAI\'s place for instructions) is "Unexpected role", another role names its index', async () => {
    fake = await startFakeProvider({ dialect: 'anthropic', reply: reply.text('hi') })
    const system = await messages({
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hi' },
      ],
    })
    expect(system.status).toBe(400)
    expect(system.body.error).toMatchObject({
      type: 'invalid_request_error',
      message:
        'messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.',
    })
    const tool = await messages({
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'tool', content: '42' },
      ],
    })
    expect(tool.status).toBe(400)
    expect(tool.body.error.message).toBe("messages.1.role: Input should be 'user' or 'assistant'")
    // The same instructions as the top-level `system` are answered.
    const answered = await messages({
      system: 'be brief',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(answered.status).toBe(200)
    expect(fake?.requests.map((r) => r.outcome)).toEqual(['error', 'error', 'success'])
  })
})
