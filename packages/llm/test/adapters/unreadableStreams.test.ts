import type { IncomingMessage, ServerResponse } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import type { StreamEvent } from '../../src/types.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'
import { rawServer } from './support/rawServer.js'

// 2xx streams that were read wrong: a `data:` keep-alive, a stream whose
// content type a proxy rewrote, an event that is not JSON, a body that
// closes right after the answer's finish, a streamed tool call's argument
// text. Each was failed (and most resent to the same model, charged $0) or
// changed on its way.

const fakes = useFakes()
const servers: Array<{ close(): void }> = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

const sse = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`
const chunk = (delta: unknown, finish: string | null = null) =>
  sse({
    id: 'c',
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta, finish_reason: finish }],
  })
const HELLO =
  chunk({ role: 'assistant', content: 'Hello' }) + chunk({ content: ' world' }) + chunk({}, 'stop')

/** A server that answers every request with `reply(model)`; counts requests per model. */
async function serving(
  reply: (model: string) => { headers?: Record<string, string>; body: string },
) {
  const requests: string[] = []
  const server = await rawServer((req: IncomingMessage, res: ServerResponse) => {
    let text = ''
    req.on('data', (c: Buffer) => {
      text += c
    })
    req.on('end', () => {
      const model = String((JSON.parse(text) as { model?: unknown }).model)
      requests.push(model)
      const { headers = { 'content-type': 'text/event-stream' }, body } = reply(model)
      res.writeHead(200, headers)
      res.end(body)
    })
  })
  servers.push(server)
  return { baseURL: server.baseURL, requests }
}

const openai = (baseURL: string, model = 'm') =>
  fakes.adapter(openAICompatible({ baseURL, apiKey: 'sk-test-key-123', model }))

async function streamed(
  models: ReturnType<typeof openai>[],
  extra: { budget?: CostBudget; records?: AttemptRecord[] } = {},
) {
  const stream = callModel({
    models,
    request: { messages: [user('hi')], maxTokens: 100, stream: true },
    limits: { admission: false, ...(extra.budget ? { budget: extra.budget } : {}) },
    retry: { budgets: false, delay: FAST_RETRIES },
    ...(extra.records ? { onAttempt: (r: AttemptRecord) => extra.records?.push(r) } : {}),
  })
  const events: StreamEvent[] = []
  let thrown: unknown
  try {
    for await (const event of stream) events.push(event)
  } catch (error) {
    thrown = error
  }
  const result = await stream.result.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  )
  return { events, thrown, result }
}

describe('a `data:` line with nothing after it (a keep-alive) is no unreadable chunk', () => {
  it.each([['data:\n\n'], ['data: \n\n'], ['event: ping\ndata:\n\n']])(
    '%j between chunks: the answer, one request',
    async (keepAlive) => {
      const server = await serving(() => ({
        body: `${keepAlive}${chunk({ role: 'assistant', content: 'Hello' })}${keepAlive}${chunk({ content: ' world' })}${chunk({}, 'stop')}data: [DONE]\n\n`,
      }))
      const { result } = await streamed([openai(server.baseURL)])
      expect(result.ok && result.value.text).toBe('Hello world')
      expect(server.requests).toHaveLength(1)
    },
  )
})

describe('the content type of a 2xx stream', () => {
  it.each([
    ['Text/Event-Stream', { 'content-type': 'Text/Event-Stream' }],
    ['text/event-stream with parameters', { 'content-type': 'TEXT/EVENT-STREAM ; charset=utf-8' }],
    ['text/plain (a proxy rewrote it)', { 'content-type': 'text/plain; charset=utf-8' }],
    ['none', {}],
  ])('%s: read as the stream it is, one request', async (_name, headers) => {
    const server = await serving(() => ({ headers, body: `${HELLO}data: [DONE]\n\n` }))
    const { result, events } = await streamed([openai(server.baseURL)])
    expect(result.ok && result.value.text).toBe('Hello world')
    expect(events.filter((e) => e.type === 'text').map((e) => e.type === 'text' && e.text)).toEqual(
      ['Hello', ' world'],
    )
    expect(server.requests).toHaveLength(1)
  })

  it('a JSON answer to a stream request is still read as JSON', async () => {
    const server = await serving(() => ({
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        id: 'x',
        choices: [
          { index: 0, message: { role: 'assistant', content: 'whole' }, finish_reason: 'stop' },
        ],
        usage: { prompt_tokens: 1, completion_tokens: 1 },
      }),
    }))
    const { result } = await streamed([openai(server.baseURL)])
    expect(result.ok && result.value.text).toBe('whole')
  })
})

describe('a 2xx stream with an event that is not JSON', () => {
  it('is not resent to the same model: the next model answers, and the first is charged as a stream cut before its first token', async () => {
    const server = await serving((model) => ({
      body:
        model === 'broken'
          ? 'data: {"choices":[{"delta":{"content":"Hel\n\n'
          : `${HELLO}data: [DONE]\n\n`,
    }))
    const prices = {
      broken: { inputPerMTok: 1_000_000, outputPerMTok: 1_000_000 },
      m: { inputPerMTok: 0, outputPerMTok: 0 },
    }
    const budget = new CostBudget({ limitUsd: 1e9, prices })
    const records: AttemptRecord[] = []
    const { result } = await streamed([openai(server.baseURL, 'broken'), openai(server.baseURL)], {
      budget,
      records,
    })
    expect(result.ok && result.value.text).toBe('Hello world')
    expect(server.requests).toEqual(['broken', 'm'])
    const first = records[0]
    expect(first).toMatchObject({ model: 'broken', status: 200, decision: 'fallback' })
    // The prompt estimate, as for any stream cut before its first token.
    const promptOnly = new CostBudget({ limitUsd: 1e9, prices }).recordEstimate(
      'broken',
      { messages: [user('hi')] },
      0,
    )
    expect(budget.spentUsd).toBeCloseTo(promptOnly, 6)
    expect(promptOnly).toBeGreaterThan(0)
  })
})

describe('a body that closes right after the answer’s finish', () => {
  const finished =
    chunk({ role: 'assistant', content: 'The answer is 42.' }) +
    chunk({}, 'stop') +
    sse({ id: 'c', choices: [], usage: { prompt_tokens: 10, completion_tokens: 6 } })

  it.each([
    ['no [DONE]', finished],
    ['`data: [DONE]` without its blank line', `${finished}data: [DONE]\n`],
  ])('OpenAI, %s: read to its end, the stream is whole', async (_name, body) => {
    const server = await serving(() => ({ body }))
    const { thrown, result, events } = await streamed([openai(server.baseURL)])
    expect(thrown).toBeUndefined()
    expect(events.at(-1)).toMatchObject({
      type: 'finish',
      finishReason: 'stop',
      usage: { outputTokens: 6 },
    })
    expect(result.ok && result.value.text).toBe('The answer is 42.')
  })

  it('Anthropic, `message_stop` without its blank line: read to its end, the stream is whole', async () => {
    const event = (type: string, data: unknown) =>
      `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`
    const body =
      event('message_start', {
        type: 'message_start',
        message: { id: 'msg_1', usage: { input_tokens: 5 } },
      }) +
      event('content_block_start', {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'text', text: '' },
      }) +
      event('content_block_delta', {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'text_delta', text: 'Hi.' },
      }) +
      event('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn' },
        usage: { output_tokens: 2 },
      }) +
      'event: message_stop\ndata: {"type":"message_stop"}\n'
    const server = await serving(() => ({ body }))
    const model = fakes.adapter(
      anthropic({
        baseURL: server.baseURL.replace(/\/v1$/, ''),
        apiKey: 'sk-ant-test-123',
        model: 'c',
      }),
    )
    const { thrown, result } = await streamed([model as ReturnType<typeof openai>])
    expect(thrown).toBeUndefined()
    expect(result.ok && result.value).toMatchObject({ text: 'Hi.', finishReason: 'stop' })
  })

  it('a stream cut before its finish still fails', async () => {
    const server = await serving(() => ({
      body: chunk({ role: 'assistant', content: 'The answer' }),
    }))
    const { thrown, result } = await streamed([openai(server.baseURL)])
    expect(thrown).toMatchObject({ code: 'STREAM_INTERRUPTED' })
    expect(result.ok).toBe(false)
  })
})

describe('a streamed tool call keeps its argument text', () => {
  it('an integer past 2^53 is replayed as it came, as from a whole answer', async () => {
    const args = '{"order_id":9007199254740993}'
    const server = await serving(() => ({
      body:
        chunk({
          tool_calls: [
            {
              index: 0,
              id: 'call_1',
              type: 'function',
              function: { name: 'refund', arguments: args },
            },
          ],
        }) +
        chunk({}, 'tool_calls') +
        'data: [DONE]\n\n',
    }))
    const { result } = await streamed([openai(server.baseURL)])
    const block = result.ok ? result.value.content[0] : undefined
    expect(block).toMatchObject({ type: 'tool_call', id: 'call_1', rawArguments: args })
    const replayed = dialects.openai.buildRequest(
      {
        messages: [
          user('refund'),
          { role: 'assistant', content: result.ok ? result.value.content : [] },
          { role: 'tool', content: [{ type: 'tool_result', toolCallId: 'call_1', content: 'ok' }] },
        ],
        maxTokens: 10,
      },
      'm',
    ).body as { messages: Array<{ tool_calls?: Array<{ function: { arguments: string } }> }> }
    expect(replayed.messages[1]?.tool_calls?.[0]?.function.arguments).toBe(args)
  })
})
