import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'

/**
 * Names the real APIs refuse before generating, which the fake answered with
 * its scripted 200: Anthropic's end-user id that is too long or an email
 * address, Gemini's function name that does not start with a letter or `_`.
 */
let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const post = (url: string, body: unknown) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  })

describe("Anthropic's metadata.user_id", () => {
  const ask = (userId: string) => ({
    model: 'claude-sonnet-4-5',
    max_tokens: 100,
    metadata: { user_id: userId },
    messages: [{ role: 'user', content: 'hi' }],
  })

  it('an email address: 400 invalid_request_error naming the field, nothing generated', async () => {
    fake = await startFakeProvider({ dialect: 'anthropic', reply: reply.text('generated anyway') })
    const res = await post(`${fake.url}/v1/messages`, ask('Alice.Smith@example.co.uk'))
    expect(res.status).toBe(400)
    const body = (await res.json()) as { type: string; error: Record<string, unknown> }
    expect(body.type).toBe('error')
    expect(body.error['type']).toBe('invalid_request_error')
    expect(body.error['message']).toMatch(
      /^metadata\.user_id: user_id appears to contain an email address\. Please send a uuid or hash value/,
    )
    expect(fake.requests[0]).toMatchObject({ outcome: 'error', paid: false, tokensSent: 0 })
  })

  it('over 256 characters, counted as characters: 400 naming the limit', async () => {
    fake = await startFakeProvider({ dialect: 'anthropic', reply: reply.text('generated anyway') })
    const over = await post(`${fake.url}/v1/messages`, ask('a'.repeat(257)))
    expect(over.status).toBe(400)
    expect(((await over.json()) as { error: { message: string } }).error.message).toBe(
      'metadata.user_id: String should have at most 256 characters',
    )
    // 256 emoji: 512 UTF-16 units, 256 characters — taken.
    const emoji = await post(`${fake.url}/v1/messages`, ask('😀'.repeat(256)))
    expect(emoji.status).toBe(200)
  })

  it('a hash, a UUID, a handle with an @ but no domain are answered; so is DeepSeek’s Anthropic API', async () => {
    fake = await startFakeProvider({ dialect: 'anthropic', reply: reply.text('ok') })
    for (const id of ['9f86d081884c7d659a2feaa0c55ad015', '@alice', 'org@1234', 'a'.repeat(256)]) {
      expect((await post(`${fake.url}/v1/messages`, ask(id))).status).toBe(200)
    }
    await fake.close()
    fake = await startFakeProvider({ dialect: 'deepseek', reply: reply.text('ok') })
    const res = await post(`${fake.url}/anthropic/v1/messages`, ask('alice@example.com'))
    expect(res.status).toBe(200)
  })
})

describe("Gemini's function declaration names", () => {
  const ask = (names: string[], key = 'functionDeclarations') => ({
    contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
    tools: [{ [key]: names.map((name) => ({ name, description: 'd' })) }],
  })

  it.each(['functionDeclarations', 'function_declarations'])(
    'one starting with a digit or a dash (%s): 400 INVALID_ARGUMENT naming each, nothing generated',
    async (key) => {
      fake = await startFakeProvider({ dialect: 'gemini', reply: reply.text('generated anyway') })
      const res = await post(
        `${fake.baseURL}/models/gemini-2.5-flash:generateContent`,
        ask(['lookup', '1password_read', 'ok.name:v-2', '-dash'], key),
      )
      expect(res.status).toBe(400)
      const body = (await res.json()) as { error: Record<string, unknown> }
      expect(body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' })
      const why =
        '[FIELD_INVALID] Invalid function name. Must start with a letter or an underscore. Must be a-z, A-Z, 0-9, or contain underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 64.'
      expect(body.error['message']).toBe(
        'The GenerateContentRequest proto is invalid:\n' +
          `  * tools[0].function_declarations[1].name: ${why}\n` +
          `  * tools[0].function_declarations[3].name: ${why}`,
      )
      expect(fake.requests[0]).toMatchObject({ outcome: 'error', paid: false, tokensSent: 0 })
    },
  )

  it('over 64 characters, or a space, is refused; streamed too; 64 and _first are answered', async () => {
    fake = await startFakeProvider({ dialect: 'gemini', reply: reply.text('ok') })
    const url = `${fake.baseURL}/models/gemini-2.5-flash`
    for (const name of ['a'.repeat(65), 'get weather']) {
      const res = await post(`${url}:streamGenerateContent?alt=sse`, ask([name]))
      expect(res.status).toBe(400)
      await res.body?.cancel()
    }
    const ok = await post(`${url}:generateContent`, ask(['a'.repeat(64), '_first']))
    expect(ok.status).toBe(200)
  })
})
