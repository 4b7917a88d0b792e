import { once } from 'node:events'
import type { ServerResponse } from 'node:http'
import { type ProviderDialect, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { gemini } from '../../src/adapters/gemini.js'
import type { AdapterOptions, ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import {
  isModelUnavailable,
  type ModelUnavailableError,
} from '../../src/errors/ModelUnavailableError.js'
import { isProviderError, type ProviderError } from '../../src/errors/ProviderError.js'
import {
  isResponseTooLarge,
  type ResponseTooLargeError,
} from '../../src/errors/ResponseTooLargeError.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'
import { rawServer } from './support/rawServer.js'

const fakes = useFakes()
const request = { messages: [user('Write the whole report.')], maxTokens: 100_000 }
const retry = { maxAttempts: 3, delay: FAST_RETRIES }
const MiB = 1024 * 1024

/** One "token" just past 1 MiB: a whole answer past the guard that error bodies keep. */
const BIG_TEXT = 'a'.repeat(MiB + 64 * 1024)

function adapterOf(
  dialect: ProviderDialect,
  baseURL: string,
  model: string,
  extra: Partial<AdapterOptions> = {},
): ModelAdapter {
  const options = { baseURL, apiKey: 'sk', model, ...extra }
  return fakes.adapter(
    dialect === 'anthropic'
      ? anthropic(options)
      : dialect === 'gemini'
        ? gemini(options)
        : openAICompatible({ ...options, dialect }),
  )
}

function completion(text: string): string {
  return JSON.stringify({
    id: 'c1',
    object: 'chat.completion',
    created: 0,
    model: 'gpt-4o',
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
  })
}

/** Writes `chunk` until the client goes away, honouring backpressure: a body without an end. */
async function writeForever(res: ServerResponse, chunk: Buffer): Promise<number> {
  let written = 0
  const closed = once(res, 'close')
  while (!res.destroyed && !res.writableEnded) {
    written += chunk.length
    if (!res.write(chunk)) {
      await Promise.race([once(res, 'drain'), closed])
    }
  }
  return written
}

const ALL_DIALECTS: ProviderDialect[] = [
  'openai',
  'deepseek',
  'qwen',
  'ernie',
  'doubao',
  'anthropic',
  'gemini',
]

describe('a valid 2xx answer over 1 MiB (under maxResponseBytes) is delivered, once', () => {
  it.each(ALL_DIALECTS)(
    '%s: a non-streamed answer over 1 MiB is parsed, not resent',
    async (dialect) => {
      const fake = await fakes.start({ dialect, reply: reply.text(BIG_TEXT) })
      const records: AttemptRecord[] = []
      const answer = await callModel({
        models: [adapterOf(dialect, fake.baseURL, 'big-model')],
        request,
        retry,
        onAttempt: (r) => records.push(r),
      })
      expect(answer.text).toHaveLength(BIG_TEXT.length)
      expect(answer.text === BIG_TEXT).toBe(true)
      expect(fake.requests).toHaveLength(1)
      expect(fake.paidGenerations).toBe(1)
      expect(records.map((r) => r.decision)).toEqual(['success'])
    },
  )

  it.each(['openai', 'anthropic', 'gemini'] as const)(
    '%s: a streamed event over 1 MiB (a single token) is parsed, not resent',
    async (dialect) => {
      const fake = await fakes.start({ dialect, reply: reply.text(BIG_TEXT) })
      const records: AttemptRecord[] = []
      const answer = await callModel({
        models: [adapterOf(dialect, fake.baseURL, 'big-model')],
        request: { ...request, stream: true },
        retry,
        onAttempt: (r) => records.push(r),
      }).result
      expect(answer.text === BIG_TEXT).toBe(true)
      expect(fake.requests).toHaveLength(1)
      expect(records.map((r) => r.decision)).toEqual(['success'])
    },
  )

  it('a stream request answered with a JSON 200 over 1 MiB is delivered as the answer', async () => {
    let hits = 0
    const server = await rawServer((req, res) => {
      hits++
      req.resume()
      const body = completion(BIG_TEXT)
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(body)
    })
    try {
      const answer = await callModel({
        models: [adapterOf('openai', server.baseURL, 'gpt-4o')],
        request: { ...request, stream: true },
        retry,
      }).result
      expect(answer.text === BIG_TEXT).toBe(true)
      expect(hits).toBe(1)
    } finally {
      server.close()
    }
  })

  it('an error status whose body is over 1 MiB is still classified by status, not parsed', async () => {
    let hits = 0
    const server = await rawServer((req, res) => {
      hits++
      req.resume()
      if (hits > 1) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(completion('ok'))
        return
      }
      // Valid JSON naming a non-retryable code: over the guard it is not read, the 503 decides.
      const body = JSON.stringify({
        error: { code: 'invalid_api_key', message: 'x'.repeat(2 * MiB) },
      })
      res.writeHead(503, { 'content-type': 'application/json' }).end(body)
    })
    try {
      const answer = await callModel({
        models: [adapterOf('openai', server.baseURL, 'gpt-4o')],
        request,
        retry,
        limits: { admission: false },
      })
      expect(answer.text).toBe('ok')
      expect(hits).toBe(2)
    } finally {
      server.close()
    }
  })
})

describe('an answer over maxResponseBytes', () => {
  it.each(['openai', 'anthropic', 'gemini'] as const)(
    '%s: is a non-retryable ResponseTooLargeError: never resent to the model, the fallback answers',
    async (dialect) => {
      const primary = await fakes.start({ dialect })
      primary.enqueue(reply.text('b'.repeat(256 * 1024)), reply.text('paid for twice'))
      const backup = await fakes.start({ dialect: 'openai', reply: reply.text('from the backup') })
      const records: AttemptRecord[] = []
      const answer = await callModel({
        models: [
          adapterOf(dialect, primary.baseURL, 'big', { maxResponseBytes: 64 * 1024 }),
          adapterOf('openai', backup.baseURL, 'small'),
        ],
        request,
        retry,
        onAttempt: (r) => records.push(r),
      })
      expect(answer.text).toBe('from the backup')
      expect(primary.requests).toHaveLength(1)
      expect(primary.queuedReplies).toBe(1)
      expect(records[0]).toMatchObject({
        model: 'big',
        status: 200,
        errorClass: 'ResponseTooLargeError',
        errorKind: 'server_error',
        decision: 'fallback',
      })
    },
  )

  it('without a fallback, the call fails after that one request, with the typed cause', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(reply.text('c'.repeat(100_000)), reply.text('again'))
    const error = await callModel({
      models: [adapterOf('openai', fake.baseURL, 'gpt-4o', { maxResponseBytes: 10_000 })],
      request,
      retry,
    }).catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    const cause = (error as ModelUnavailableError).lastCause as ProviderError
    expect(isProviderError(cause)).toBe(true)
    expect(cause).toMatchObject({ kind: 'server_error', retryable: false, status: 200 })
    expect(cause.message).toMatch(/maxResponseBytes/)
    expect(isResponseTooLarge(cause.cause)).toBe(true)
    const tooLarge = cause.cause as ResponseTooLargeError
    expect(tooLarge).toMatchObject({
      code: 'RESPONSE_TOO_LARGE',
      provider: 'openai',
      model: 'gpt-4o',
      status: 200,
      limitBytes: 10_000,
    })
    // The fake announced its length: refused on the header, before reading the body.
    expect(tooLarge.declaredBytes).toBeGreaterThan(100_000)
    expect(fake.requests).toHaveLength(1)
    expect(fake.queuedReplies).toBe(1)
  })

  it('a body without a length is read only up to the limit, then its connection is closed', async () => {
    let hits = 0
    let served: Promise<number> | undefined
    const closed: Promise<unknown>[] = []
    const server = await rawServer((req, res) => {
      hits++
      req.resume()
      closed.push(once(res, 'close'))
      // Chunked, and never ending: before the fix the whole of it was read.
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write('{"id":"c1","object":"chat.completion","choices":[{"message":{"content":"')
      served = writeForever(res, Buffer.alloc(64 * 1024, 0x61))
    })
    try {
      const error = await callModel({
        models: [adapterOf('openai', server.baseURL, 'gpt-4o', { maxResponseBytes: MiB })],
        request,
        retry,
        limits: { admission: false },
      }).catch((e: unknown) => e)
      expect(isModelUnavailable(error)).toBe(true)
      const cause = (error as ModelUnavailableError).lastCause as ProviderError
      expect(cause).toMatchObject({ retryable: false, status: 200 })
      const tooLarge = cause.cause as ResponseTooLargeError
      expect(isResponseTooLarge(tooLarge)).toBe(true)
      expect(tooLarge.declaredBytes).toBeUndefined()
      expect(tooLarge.readBytes).toBeGreaterThan(MiB)
      // Stopped at the chunk that went past the limit, not after the rest.
      expect(tooLarge.readBytes).toBeLessThan(2 * MiB)
      expect(hits).toBe(1)
      // The server saw the connection go: the read stopped, it was not drained.
      await Promise.all(closed)
      await served
    } finally {
      server.close()
    }
  })

  it('a stream request answered with an oversized JSON 200 fails the same way, sent once', async () => {
    let hits = 0
    const server = await rawServer((req, res) => {
      hits++
      req.resume()
      res.writeHead(200, { 'content-type': 'application/json' }).end(completion('d'.repeat(50_000)))
    })
    try {
      const error = await callModel({
        models: [adapterOf('openai', server.baseURL, 'gpt-4o', { maxResponseBytes: 20_000 })],
        request: { ...request, stream: true },
        retry,
        limits: { admission: false },
      }).result.catch((e: unknown) => e)
      expect(isModelUnavailable(error)).toBe(true)
      const cause = (error as ModelUnavailableError).lastCause as ProviderError
      expect(cause).toMatchObject({ retryable: false, status: 200 })
      expect(isResponseTooLarge(cause.cause)).toBe(true)
      expect(hits).toBe(1)
    } finally {
      server.close()
    }
  })

  it('an error status over the limit is cut there and classified by status (retried as before)', async () => {
    let hits = 0
    const server = await rawServer((req, res) => {
      hits++
      req.resume()
      if (hits > 1) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(completion('ok'))
        return
      }
      res.writeHead(502, { 'content-type': 'text/html' })
      res.write('<html>bad gateway')
      void writeForever(res, Buffer.alloc(64 * 1024, 0x62))
    })
    try {
      const records: AttemptRecord[] = []
      const answer = await callModel({
        models: [adapterOf('openai', server.baseURL, 'gpt-4o', { maxResponseBytes: 100_000 })],
        request,
        retry,
        limits: { admission: false },
        onAttempt: (r) => records.push(r),
      })
      expect(answer.text).toBe('ok')
      expect(hits).toBe(2)
      expect(records[0]).toMatchObject({
        status: 502,
        errorKind: 'server_error',
        decision: 'retry',
      })
    } finally {
      server.close()
    }
  })
})

describe('maxResponseBytes', () => {
  it('defaults to 32 MiB: an answer over 1 MiB needs no option', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text(BIG_TEXT) })
    const model = adapterOf('openai', fake.baseURL, 'm')
    const result = await model.send(request, {
      apiKey: 'sk',
      idempotencyKey: 'k',
      deadline: undefined,
      signal: new AbortController().signal,
    })
    expect(result.ok).toBe(true)
  })

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '1024', null])(
    'refuses %s when the adapter is made, naming the option',
    (value) => {
      expect(() =>
        openAICompatible({
          baseURL: 'http://127.0.0.1:9',
          model: 'm',
          maxResponseBytes: value as number,
        }),
      ).toThrow(/maxResponseBytes/)
    },
  )

  it('the error from send() is a ProviderError whose cause is typed', async () => {
    const fake = await fakes.start({ dialect: 'anthropic', reply: reply.text('e'.repeat(5000)) })
    const model = adapterOf('anthropic', fake.baseURL, 'claude', { maxResponseBytes: 1000 })
    const result = await model.send(request, {
      apiKey: 'sk',
      idempotencyKey: 'k',
      deadline: undefined,
      signal: new AbortController().signal,
    })
    expect(result.ok).toBe(false)
    if (result.ok) return
    expect(result.error).toMatchObject({ retryable: false, status: 200, kind: 'server_error' })
    expect(isResponseTooLarge(result.error.cause)).toBe(true)
    expect(result.error.normalized.message).toMatch(/not resent to this model/)
  })
})
