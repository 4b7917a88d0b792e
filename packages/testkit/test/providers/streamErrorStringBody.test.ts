import { afterEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'

// A captured provider frame pasted as a string, as `reply.error()` takes a
// body: it was encoded again (`data: "{\"error\":…}"`), a frame no provider
// sends, so a client that retries the real frame read it as unreadable.

let fake: FakeProvider | undefined
afterEach(async () => {
  await fake?.close()
  fake = undefined
})

const OVERLOADED = '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
const SERVER_ERROR =
  '{"error":{"message":"The server had an error","type":"server_error","code":null}}'

async function streamed(provider: FakeProvider, path: string, body: object): Promise<string> {
  const res = await fetch(`${provider.baseURL}${path}`, {
    method: 'POST',
    headers: {
      authorization: 'Bearer k',
      'x-api-key': 'k',
      'anthropic-version': '2023-06-01',
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
  })
  return res.text()
}

const anthropicBody = {
  model: 'm',
  max_tokens: 5,
  stream: true,
  messages: [{ role: 'user', content: 'x' }],
}
const openAIBody = { model: 'm', stream: true, messages: [{ role: 'user', content: 'x' }] }

describe('streamError.body', () => {
  it('a string is sent as written on the Anthropic route, as reply.error() sends one', async () => {
    fake = await startFakeProvider({
      dialect: 'anthropic',
      reply: reply.text('Hi', { streamError: { afterTokens: 0, body: OVERLOADED } }),
    })
    const raw = await streamed(fake, '/v1/messages', anthropicBody)
    expect(raw).toContain(`event: error\ndata: ${OVERLOADED}\n\n`)
  })

  it('a string is sent as written on the OpenAI route', async () => {
    fake = await startFakeProvider({
      dialect: 'openai',
      reply: reply.text('Hi', { streamError: { afterTokens: 0, body: SERVER_ERROR } }),
    })
    const raw = await streamed(fake, '/v1/chat/completions', openAIBody)
    expect(raw).toContain(`data: ${SERVER_ERROR}\n\n`)
    expect(raw).not.toContain('data: "')
  })

  it('an object is sent as its JSON, as before', async () => {
    fake = await startFakeProvider({
      dialect: 'openai',
      reply: reply.text('Hi', {
        streamError: { afterTokens: 0, body: JSON.parse(SERVER_ERROR) as object },
      }),
    })
    const raw = await streamed(fake, '/v1/chat/completions', openAIBody)
    expect(raw).toContain(`data: ${SERVER_ERROR}\n\n`)
  })

  it('left out, or a string with a line break, is refused where the reply is written', () => {
    // Left out, the frame read `data: undefined`.
    expect(() => reply.text('Hi', { streamError: { afterTokens: 0 } as never })).toThrow(
      /streamError\.body must be the error payload/,
    )
    // A line break would end the SSE frame early.
    expect(() => reply.text('Hi', { streamError: { afterTokens: 0, body: '{"a":\n1}' } })).toThrow(
      /streamError\.body must be one line/,
    )
  })
})
