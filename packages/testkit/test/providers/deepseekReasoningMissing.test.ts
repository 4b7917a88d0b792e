import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'

/**
 * DeepSeek's thinking mode (on by default for deepseek-reasoner and the V4
 * names) refuses a request whose history has an assistant message without
 * `reasoning_content` in a user turn where the model called tools
 * (api-docs.deepseek.com/guides/thinking_mode#tool-calls). The fake
 * answered 200, so a client dropping the field passed here and failed
 * every tool loop's second request against DeepSeek.
 */

// One fake for the file: each request is answered on its own.
let fake: FakeProvider
beforeAll(async () => {
  fake = await startFakeProvider({ dialect: 'deepseek', reply: reply.text('4 °C in Oslo') })
})
afterAll(() => fake.close())

const CALL = {
  id: 'call_0',
  type: 'function',
  function: { name: 'weather', arguments: '{"city":"Oslo"}' },
}
const tools = [{ type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }]

/** A tool loop's second request: the call (with `withCall` on the assistant turn), then its result. */
const loop = (withCall: Record<string, unknown> = {}) => [
  { role: 'system', content: 'be brief' },
  { role: 'user', content: 'weather in Oslo?' },
  { role: 'assistant', content: '', tool_calls: [CALL], ...withCall },
  { role: 'tool', tool_call_id: 'call_0', content: '4 °C' },
]

async function chat(body: Record<string, unknown>) {
  const res = await fetch(`${fake.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer sk-ds', 'content-type': 'application/json' },
    body: JSON.stringify({ tools, ...body }),
  })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

const refusedWith = (message: string) => ({
  status: 400,
  body: {
    error: { message, type: 'invalid_request_error', param: null, code: 'invalid_request_error' },
  },
})

describe('the deepseek fake in thinking mode', () => {
  it('refuses a tool loop sent back without reasoning_content (deepseek-reasoner: names the index)', async () => {
    expect(await chat({ model: 'deepseek-reasoner', messages: loop() })).toEqual(
      refusedWith(
        'Missing `reasoning_content` field in the assistant message at message index 2. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls',
      ),
    )
    expect(fake.requests.at(-1)).toMatchObject({ outcome: 'error', paid: false })
  })

  it.each(['deepseek-v4-flash', 'deepseek-v4-pro', 'deepseek-flash'])(
    '%s refuses it in the V4 words',
    async (model) => {
      expect(await chat({ model, messages: loop() })).toEqual(
        refusedWith('The `reasoning_content` in the thinking mode must be passed back to the API.'),
      )
    },
  )

  it('answers the loop sent back with its reasoning_content, "" included', async () => {
    for (const reasoning of ['need the weather first', '']) {
      const answer = await chat({
        model: 'deepseek-v4-flash',
        messages: loop({ reasoning_content: reasoning }),
      })
      expect(answer.status).toBe(200)
    }
  })

  it('wants it on every assistant turn of the user turn that called tools, the answer after the results too', async () => {
    const messages: Array<Record<string, unknown>> = [
      ...loop({ reasoning_content: 'need the weather first' }),
      { role: 'assistant', content: '4 °C in Oslo' },
      { role: 'user', content: 'and tomorrow?' },
    ]
    expect(await chat({ model: 'deepseek-reasoner', messages })).toMatchObject({
      status: 400,
      body: { error: { message: expect.stringContaining('at message index 4.') } },
    })
    messages[4] = { ...messages[4], reasoning_content: 'said it' }
    expect((await chat({ model: 'deepseek-reasoner', messages })).status).toBe(200)
  })

  it('does not want it in user turns without tool calls', async () => {
    const messages = [
      { role: 'user', content: '2+2?' },
      { role: 'assistant', content: '4' },
      { role: 'user', content: 'and 3+3?' },
    ]
    expect((await chat({ model: 'deepseek-v4-pro', messages })).status).toBe(200)
  })

  it('takes it all without thinking mode: turned off, deepseek-chat, or a name the fake does not know', async () => {
    const off = { thinking: { type: 'disabled' } }
    expect((await chat({ model: 'deepseek-v4-flash', messages: loop(), ...off })).status).toBe(200)
    expect((await chat({ model: 'deepseek-chat', messages: loop() })).status).toBe(200)
    expect((await chat({ model: 'm', messages: loop() })).status).toBe(200)
  })

  it('refuses it when thinking is asked for by name, whatever the model', async () => {
    const on = { thinking: { type: 'enabled' } }
    expect((await chat({ model: 'deepseek-chat', messages: loop(), ...on })).status).toBe(400)
  })
})
