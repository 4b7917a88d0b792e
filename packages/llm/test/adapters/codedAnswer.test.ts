import type { IncomingMessage, ServerResponse } from 'node:http'
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib'
import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isResponseTooLarge } from '../../src/errors/ResponseTooLargeError.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'
import { rawServer } from './support/rawServer.js'

// Adapters ask for `accept-encoding: identity`; a provider or proxy that codes
// the answer anyway (Content-Encoding gzip, br, deflate) sent a generation —
// it was taken for "no JSON: a proxy's page; nothing was generated", asked
// again three times (each generated and billed), charged nothing, and failed.
// Decoded, the answer is read once; a bomb stops at maxResponseBytes, counted
// in decoded bytes.

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
const chunk = (delta: unknown, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
const STREAM = `${chunk({ content: 'hello' })}${chunk({}, 'stop')}data: [DONE]\n\n`

/** Answers each request with the next of `replies` (the last one again when they run out). */
async function serving(type: string, replies: Array<{ coding: string; body: Buffer }>) {
  let requests = 0
  const server = await rawServer((req: IncomingMessage, res: ServerResponse) => {
    const reply = replies[Math.min(requests, replies.length - 1)] as (typeof replies)[number]
    requests++
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'content-type': type, 'content-encoding': reply.coding })
      res.end(reply.body)
    })
  })
  servers.push(server)
  return { baseURL: server.baseURL, requests: () => requests }
}

const adapter = (baseURL: string, maxResponseBytes?: number) =>
  fakes.adapter(
    openAICompatible({
      baseURL,
      apiKey: 'sk-test-key-123',
      model: 'm',
      ...(maxResponseBytes === undefined ? {} : { maxResponseBytes }),
    }),
  )
const options = {
  limits: { admission: false as const },
  retry: { budgets: false as const, delay: FAST_RETRIES },
}

describe('an answer coded though identity was asked for', () => {
  it.each([
    ['gzip', gzipSync(WHOLE)],
    ['x-gzip', gzipSync(WHOLE)],
    ['br', brotliCompressSync(WHOLE)],
    ['deflate', deflateSync(WHOLE)],
    ['gzip, gzip', gzipSync(gzipSync(WHOLE))],
  ])('%s: the whole answer is read, one request', async (coding, body) => {
    const server = await serving('application/json', [{ coding, body }])
    const answer = await callModel({
      models: [adapter(server.baseURL)],
      request: { messages: [user('hi')], maxTokens: 10 },
      ...options,
    })
    expect(answer.text).toBe('hello')
    expect(server.requests()).toBe(1)
  })

  it('a gzip stream is streamed, one request', async () => {
    const server = await serving('text/event-stream', [{ coding: 'gzip', body: gzipSync(STREAM) }])
    const stream = callModel({
      models: [adapter(server.baseURL)],
      request: { messages: [user('hi')], maxTokens: 10, stream: true },
      ...options,
    })
    let text = ''
    for await (const event of stream) if (event.type === 'text') text += event.text
    expect(text).toBe('hello')
    expect(server.requests()).toBe(1)
  })

  it('a decompression bomb stops at maxResponseBytes of decoded bytes, not resent', async () => {
    // 64 MiB of NULs per ~64 KiB gzip member; 4 members after an answer's opening.
    const zeros = gzipSync(Buffer.alloc(64 << 20))
    const bomb = Buffer.concat([
      gzipSync('{"choices":[{"message":{"content":"'),
      zeros,
      zeros,
      zeros,
      zeros,
    ])
    const server = await serving('application/json', [{ coding: 'gzip', body: bomb }])
    const failure = await callModel({
      models: [adapter(server.baseURL, 1 << 20)],
      request: { messages: [user('hi')], maxTokens: 10 },
      ...options,
    }).then(
      () => undefined,
      (error: unknown) => error,
    )
    const cause = (failure as { cause?: { cause?: unknown } }).cause
    expect(isResponseTooLarge(cause?.cause)).toBe(true)
    expect(server.requests()).toBe(1)
  })
})

// An empty 2xx body is no generation: "a retryable server_error, as an empty
// 200 body is" (README). Labelled with a coding (Content-Encoding gzip, br,
// deflate: a proxy's label on nothing), the decoder, given no byte, failed
// "unexpected end of file": the empty body became a 2xx that "broke off while
// its body was read" — not asked again, and charged as a whole generation —
// where undici's fetch and browsers read it as the empty body it is. And a
// `deflate` answer sent raw (no zlib header), which fetch reads, was the same
// billed cut.

const budget = () =>
  new CostBudget({ limitUsd: 10, prices: { m: { inputPerMTok: 1000, outputPerMTok: 1000 } } })

describe('an empty 2xx labelled with a coding', () => {
  it.each([['gzip'], ['br'], ['deflate']])(
    '%s: the empty body is asked again, free, as an unlabelled one',
    async (coding) => {
      const server = await serving('application/json', [
        { coding, body: Buffer.alloc(0) },
        { coding: 'gzip', body: gzipSync(WHOLE) },
      ])
      const records: AttemptRecord[] = []
      const answer = await callModel({
        models: [adapter(server.baseURL)],
        request: { messages: [user('hi')], maxTokens: 10 },
        ...options,
        limits: { admission: false, budget: budget() },
        onAttempt: (record) => records.push(record),
      })
      expect(answer.text).toBe('hello')
      expect(server.requests()).toBe(2)
      expect(records[0]).toMatchObject({
        status: 200,
        errorKind: 'server_error',
        decision: 'retry',
      })
      expect(records[0]?.costUsd).toBe(0)
    },
  )

  it('streamed: the empty gzip body is asked again, as an empty stream is', async () => {
    const server = await serving('text/event-stream', [
      { coding: 'gzip', body: Buffer.alloc(0) },
      { coding: 'gzip', body: gzipSync(STREAM) },
    ])
    const stream = callModel({
      models: [adapter(server.baseURL)],
      request: { messages: [user('hi')], maxTokens: 10, stream: true },
      ...options,
    })
    let text = ''
    for await (const event of stream) if (event.type === 'text') text += event.text
    expect(text).toBe('hello')
    expect(server.requests()).toBe(2)
  })
})

describe('deflate sent raw (no zlib header), as undici’s fetch reads it', () => {
  it('the whole answer is read, one request', async () => {
    const server = await serving('application/json', [
      { coding: 'deflate', body: deflateRawSync(WHOLE) },
    ])
    const answer = await callModel({
      models: [adapter(server.baseURL)],
      request: { messages: [user('hi')], maxTokens: 10 },
      ...options,
    })
    expect(answer.text).toBe('hello')
    expect(server.requests()).toBe(1)
  })

  it('a corrupt body still fails as a cut answer: not resent', async () => {
    const body = gzipSync(WHOLE)
    body[body.length - 6] = (body[body.length - 6] as number) ^ 0xff
    const server = await serving('application/json', [{ coding: 'gzip', body }])
    const failure = await callModel({
      models: [adapter(server.baseURL)],
      request: { messages: [user('hi')], maxTokens: 10 },
      ...options,
    }).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(failure).toBeDefined()
    expect(server.requests()).toBe(1)
  })
})
