import type { IncomingMessage, ServerResponse } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import type { SendOptions } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { readEvents } from '../../src/adapters/readEvents.js'
import { callModel } from '../../src/call/callModel.js'
import { isProviderError } from '../../src/errors/ProviderError.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'
import { rawServer } from './support/rawServer.js'

// A 200 to a stream request whose Content-Type says `text/event-stream` but
// whose body is JSON: a whole answer (a server or proxy that ignores
// `stream: true` and labels its answer by the request's Accept), or an error
// object in the 200. The same body labelled `application/json` is read; under
// the stream's type the SSE decoder dropped it as an unknown field, and the
// call failed "no answer" after asking three times — each a generation.

const fakes = useFakes()
const servers: Array<{ close(): void }> = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

const WHOLE = JSON.stringify({
  id: 'c1',
  object: 'chat.completion',
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
})

async function serving(body: string) {
  let requests = 0
  const server = await rawServer((req: IncomingMessage, res: ServerResponse) => {
    requests++
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.end(body)
    })
  })
  servers.push(server)
  return { baseURL: server.baseURL, requests: () => requests }
}

function streamed(baseURL: string) {
  const model = fakes.adapter(openAICompatible({ baseURL, apiKey: 'sk-test-key-123', model: 'm' }))
  return callModel({
    models: [model],
    request: { messages: [user('hi')], maxTokens: 100, stream: true },
    limits: { admission: false },
    retry: { budgets: false, delay: FAST_RETRIES },
  })
}

describe('JSON under a stream’s Content-Type', () => {
  it.each([
    ['as it is', WHOLE],
    ['after a BOM and a blank line', `\ufeff\n${WHOLE}`],
  ])('a whole answer %s is read, one request', async (_name, body) => {
    const server = await serving(body)
    const stream = streamed(server.baseURL)
    let text = ''
    for await (const event of stream) if (event.type === 'text') text += event.text
    expect(text).toBe('hello')
    expect((await stream.result).usage).toMatchObject({ inputTokens: 3, outputTokens: 1 })
    expect(server.requests()).toBe(1)
  })

  it('an error object in the 200 is classified as the provider’s error, not "no answer"', async () => {
    const server = await serving(
      '{"error":{"message":"Requests rate limit exceeded, please try again later.","type":"rate_limit_error","code":"rate_limit_exceeded"}}',
    )
    const stream = streamed(server.baseURL)
    const failure = await stream.result.then(
      () => undefined,
      (error: unknown) => error,
    )
    const cause = (failure as { cause?: unknown }).cause
    expect(isProviderError(cause) && cause.normalized.kind).toBe('rate_limited')
    expect(String((cause as Error).message)).not.toMatch(/no answer/)
  })

  it('a real SSE stream that begins with a comment is still streamed', async () => {
    const chunk = (delta: unknown, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
    const server = await serving(
      `: hi\n\n${chunk({ content: 'hello' })}${chunk({}, 'stop')}data: [DONE]\n\n`,
    )
    const stream = streamed(server.baseURL)
    let text = ''
    for await (const event of stream) if (event.type === 'text') text += event.text
    expect(text).toBe('hello')
    expect(server.requests()).toBe(1)
  })

  it('a BOM cut across chunks still leads to the JSON behind it', async () => {
    // The reader sees the body as the network cut it: EF, then BB BF {…}.
    // Judged on its first chunk alone, EF was "no `{`": read as SSE, no event.
    const bytes = Buffer.from(`\ufeff${WHOLE}`)
    const chunks = [bytes.subarray(0, 1), bytes.subarray(1, 2), bytes.subarray(2)]
    const body = {
      async *[Symbol.asyncIterator]() {
        yield* chunks
      },
      destroy() {},
    }
    const signal = new AbortController().signal
    const send: SendOptions = {
      apiKey: undefined,
      idempotencyKey: 'k',
      signal,
      deadline: undefined,
    }
    const seen: string[] = []
    const events = readEvents(
      body,
      { createStreamParser: () => ({ feed: () => [], end: () => [] }) as never },
      send,
      { provider: 'openai', model: 'm', signal, deadline: undefined },
      1 << 20,
      {
        limitBytes: 1 << 20,
        tooLarge: () => new Error('too large') as never,
        answer: (text) => {
          seen.push(text)
          return (async function* () {})()
        },
      },
    )
    for await (const _ of events) {
      // read to the end
    }
    expect(seen.map((text) => JSON.parse(text).id)).toEqual(['c1'])
  })
})
