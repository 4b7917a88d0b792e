import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { dataOf, readSse } from './sse.js'

/**
 * ERNIE's legacy wenxinworkshop API returns the model's function call beside
 * `result`: `function_call: {name, arguments, thoughts?}`, `arguments` a JSON
 * string, with `finish_reason: "function_call"` (Baidu's response table:
 * "function_call — 由模型生成的函数调用，包含函数名称，和调用参数"). The fake said
 * `function_call` as the finish reason but sent no call at all: a client's
 * function-calling path got nothing to call against the fake.
 */
let fake: FakeProvider
beforeAll(async () => {
  fake = await startFakeProvider({ dialect: 'ernie' })
})
beforeEach(() => fake.reset())
afterAll(() => fake.close())

const PATH = '/rpc/2.0/ai_custom/v1/wenxinworkshop/chat/ernie-4.0-8k'
const post = (body: Record<string, unknown>) =>
  fetch(`${fake.url}${PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      messages: [{ role: 'user', content: 'weather in Paris?' }],
      functions: [
        {
          name: 'get_weather',
          description: 'the weather in a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      ],
      ...body,
    }),
  })
const CALL = reply.text('', { toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] })

describe('ernie legacy: a function call', () => {
  it('unstreamed: function_call with its name and arguments (a JSON string)', async () => {
    fake.enqueue(CALL)
    const answer = (await (await post({})).json()) as Record<string, unknown>
    expect(answer).toMatchObject({
      result: '',
      finish_reason: 'function_call',
      function_call: { name: 'get_weather', arguments: '{"city":"Paris"}' },
    })
  })

  it('streamed: the is_end chunk carries it', async () => {
    fake.enqueue(CALL)
    const chunks = dataOf<Record<string, unknown>>(await readSse(await post({ stream: true })))
    expect(chunks.at(-1)).toMatchObject({
      is_end: true,
      finish_reason: 'function_call',
      function_call: { name: 'get_weather', arguments: '{"city":"Paris"}' },
    })
  })
})
