import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { dataOf, readSse } from './sse.js'

/**
 * ERNIE's legacy wenxinworkshop API, as Baidu's response table has it:
 * `finish_reason` is `normal` — "输出内容完全由大模型生成，未触发截断、替换" (the
 * model finished on its own) —, `stop` — "输出结果命中入参stop中指定的字段后被截断"
 * (cut where it met one of the request's `stop` sequences) —, `length`,
 * `content_filter` or `function_call`; with the last, the model's call comes
 * beside `result`: `function_call: {name, arguments, thoughts?}`, `arguments`
 * a JSON string ("由模型生成的函数调用，包含函数名称，和调用参数"). The fake
 * said `normal` for a stop-sequence cut, and `function_call` with no call at
 * all: a client's branches for either were never exercised against it.
 */
let fake: FakeProvider
beforeAll(async () => {
  fake = await startFakeProvider({ dialect: 'ernie', honourOutputLimits: true })
})
beforeEach(() => fake.reset())
afterAll(() => fake.close())

const PATH = '/rpc/2.0/ai_custom/v1/wenxinworkshop/chat/ernie-4.0-8k'
const post = (body: Record<string, unknown>) =>
  fetch(`${fake.url}${PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'count' }], ...body }),
  })

describe('ernie legacy: finish_reason of an answer a stop sequence ended', () => {
  it('unstreamed: stop (a whole answer stays normal)', async () => {
    fake.enqueue(reply.text('one two three four five'), reply.text('one two three four five'))
    expect(await (await post({ stop: [' four'] })).json()).toMatchObject({
      result: 'one two three',
      is_truncated: false,
      finish_reason: 'stop',
    })
    expect(await (await post({})).json()).toMatchObject({
      result: 'one two three four five',
      finish_reason: 'normal',
    })
  })

  it('streamed: the is_end chunk says stop, the text chunks normal', async () => {
    fake.enqueue(reply.text('one two three four five'))
    const chunks = dataOf<{ is_end: boolean; result: string; finish_reason: string }>(
      await readSse(await post({ stop: [' four'], stream: true })),
    )
    expect(chunks.map((c) => c.result).join('')).toBe('one two three')
    expect(chunks.at(-1)).toMatchObject({ is_end: true, finish_reason: 'stop' })
    expect(chunks.slice(0, -1).every((c) => c.finish_reason === 'normal')).toBe(true)
  })
})

const FUNCTIONS = [
  {
    name: 'get_weather',
    description: 'the weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } } },
  },
]
const CALL = reply.text('', { toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] })

describe('ernie legacy: a function call', () => {
  it('unstreamed: function_call with its name and arguments (a JSON string)', async () => {
    fake.enqueue(CALL)
    const answer = (await (await post({ functions: FUNCTIONS })).json()) as Record<string, unknown>
    expect(answer).toMatchObject({
      result: '',
      finish_reason: 'function_call',
      function_call: { name: 'get_weather', arguments: '{"city":"Paris"}' },
    })
  })

  it('streamed: the is_end chunk carries it', async () => {
    fake.enqueue(CALL)
    const chunks = dataOf<Record<string, unknown>>(
      await readSse(await post({ functions: FUNCTIONS, stream: true })),
    )
    expect(chunks.at(-1)).toMatchObject({
      is_end: true,
      finish_reason: 'function_call',
      function_call: { name: 'get_weather', arguments: '{"city":"Paris"}' },
    })
  })
})
