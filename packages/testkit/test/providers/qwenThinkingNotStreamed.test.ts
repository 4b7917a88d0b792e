import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { dataOf, readSse } from './sse.js'

/**
 * Model Studio (DashScope compatible mode) serves some thinking models as
 * a stream only: a non-streamed request to an open-weight hybrid Qwen3
 * that thinks (its default) or to QwQ is a 400. The fake answered 200, so
 * a client calling qwen3-32b without `stream: true` or
 * `enable_thinking: false` passed here and had every call refused.
 */

// One fake for the file: each request is answered on its own.
let fake: FakeProvider
beforeAll(async () => {
  fake = await startFakeProvider({ dialect: 'qwen', reply: reply.text('我是通义千问') })
})
afterAll(() => fake.close())

async function chat(body: Record<string, unknown>) {
  return fetch(`${fake.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer sk-qwen', 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: '你是谁' }], ...body }),
  })
}

const refusedWith = (message: string) => ({
  error: { code: 'invalid_parameter_error', param: null, message, type: 'invalid_request_error' },
  id: expect.stringMatching(/^chatcmpl-/),
  request_id: expect.any(String),
})

const THINKING_NOT_STREAMED =
  'parameter.enable_thinking must be set to false for non-streaming calls'

describe('the qwen fake and thinking models that answer in a stream only', () => {
  it.each(['qwen3-32b', 'qwen3-235b-a22b', 'qwen3-8b'])(
    '%s, not streamed and thinking by default, is a 400 invalid_parameter_error',
    async (model) => {
      const res = await chat({ model })
      expect(res.status).toBe(400)
      expect(await res.json()).toEqual(refusedWith(THINKING_NOT_STREAMED))
      expect(fake.requests.at(-1)).toMatchObject({ outcome: 'error', paid: false })
    },
  )

  it('so is one given enable_thinking: true', async () => {
    const res = await chat({ model: 'qwen3-30b-a3b', enable_thinking: true })
    expect(res.status).toBe(400)
    expect(await res.json()).toEqual(refusedWith(THINKING_NOT_STREAMED))
  })

  it('answers it with enable_thinking: false, and thinks in a stream', async () => {
    const quiet = await chat({ model: 'qwen3-32b', enable_thinking: false })
    expect(quiet.status).toBe(200)
    expect(await quiet.json()).toMatchObject({
      choices: [{ message: { content: '我是通义千问' } }],
    })
    const streamed = await chat({ model: 'qwen3-32b', stream: true })
    expect(streamed.status).toBe(200)
    const text = dataOf<{ choices?: { delta: { content?: string } }[] }>(await readSse(streamed))
      .map((c) => c.choices?.[0]?.delta.content ?? '')
      .join('')
    expect(text).toBe('我是通义千问')
  })

  it('refuses QwQ without a stream in its own words, whatever enable_thinking says', async () => {
    for (const body of [{ model: 'qwq-plus' }, { model: 'qwq-32b', enable_thinking: false }]) {
      const res = await chat(body)
      expect(res.status).toBe(400)
      expect(await res.json()).toEqual(
        refusedWith(
          'This model only support stream mode, please enable the stream parameter to access the model. ',
        ),
      )
    }
    expect((await chat({ model: 'qwq-plus', stream: true })).status).toBe(200)
  })

  it('leaves the rest as they were: commercial and 2507 models, unknown names', async () => {
    for (const model of ['qwen-plus', 'qwen3-max', 'qwen3-235b-a22b-instruct-2507', 'm']) {
      expect((await chat({ model })).status).toBe(200)
    }
  })
})
