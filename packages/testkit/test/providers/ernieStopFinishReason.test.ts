import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { dataOf, readSse } from './sse.js'

/**
 * ERNIE's legacy wenxinworkshop API names why an answer ended in
 * `finish_reason`: `normal` — "输出内容完全由大模型生成，未触发截断、替换" (the
 * model finished on its own) —, `stop` — "输出结果命中入参stop中指定的字段后被截断"
 * (cut where it met one of the request's `stop` sequences) —, `length`,
 * `content_filter`, `function_call` (Baidu's response table, quoted in every
 * ERNIE client's response type). With `honourOutputLimits` the fake cut the
 * text at the stop sequence but said `normal`, so a client that tells a
 * stop-sequence cut from a whole answer was never exercised.
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
